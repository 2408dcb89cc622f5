"""The written verdict, generated from the numbers (never written by hand).

A design wins an axis only where the spread allows it: with several seeds, when the
ranges (min..max) of the two designs do not overlap; with one seed, when the two values
differ by more than :data:`MARGIN` (and the verdict says there was one run).
"""

from __future__ import annotations

from typing import Any

MARGIN = 0.2


def axis(row: dict[str, Any], a: str, b: str) -> str | None:
    """One sentence on one metric, or None: not measured for both, or a count no one wins.

    A count no design wins (alerts published) has ``lower_is_better`` None.
    """
    x, y = row.get(a), row.get(b)
    if not x or not y or row["lower_is_better"] is None:
        return None
    name, unit, lower = row["metric"], row["unit"], row["lower_is_better"]
    mx, my = x["median"], y["median"]
    if x["n"] > 1 and y["n"] > 1:
        apart = x["max"] < y["min"] or y["max"] < x["min"]
        basis = (
            f"medians of {x['n']} seeds, ranges apart"
            if apart
            else f"ranges of {x['n']} seeds overlap"
        )
    else:
        big = max(abs(mx), abs(my))
        apart = big > 0 and abs(mx - my) / big > MARGIN
        basis = "one run"
    if not apart:
        return f"{name}: no clear winner ({_fmt(mx)} vs {_fmt(my)} {unit}; {basis})."
    better = a if (mx < my) == lower else b
    vb, vw = (mx, my) if better == a else (my, mx)
    ratio = (
        f"{max(vw, vb) / min(vw, vb):.1f}x" if min(vw, vb) > 0 else f"{_fmt(abs(vw - vb))} {unit}"
    )
    word = "lower" if lower else "higher"
    return f"{name}: {better} wins ({_fmt(vb)} vs {_fmt(vw)} {unit}, {word} by {ratio}; {basis})."


def late_sentences(late: dict[str, list[dict[str, Any]]], a: str, b: str) -> list[str]:
    """What each design did with late events, per allowed lateness."""
    out = []
    for ra, rb in zip(late.get(a, []), late.get(b, []), strict=False):
        lost_a, lost_b = ra["excluded_for_good"], rb["excluded_for_good"]
        where = f"allowed lateness {ra['allowed_lateness']}"
        if lost_a == lost_b == 0:
            out.append(f"Late data, {where}: neither design lost an event (no difference).")
            continue
        if lost_a == lost_b:
            out.append(
                f"Late data, {where}: both excluded {lost_a:g} events for good (no difference)."
            )
            continue
        keeper = a if lost_a < lost_b else b
        loser = b if keeper == a else a
        lost = max(lost_a, lost_b)
        share = lost / max(ra["unique_events"], 1)
        absorbed = (ra if keeper == a else rb)["absorbed_later"]
        out.append(
            f"Late data, {where}: {loser} excluded {lost:g} events for good ({share:.2%} of the "
            f"log); {keeper} excluded {min(lost_a, lost_b):g} (it absorbed {absorbed:g} later)."
        )
    return out


def _fmt(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"


def verdict(results: dict[str, Any]) -> list[str]:
    """Sentences: validity first, then one per axis, then late data."""
    designs = results["designs"]
    if len(designs) < 2:
        return ["Only one design ran: nothing to compare."]
    a, b = designs[0], designs[1]
    lines = []
    if not results["valid"]:
        lines.append(
            "INVALID RUN: the load generator fell behind its schedule; "
            "its latency figures are not results."
        )
    lines += [s for row in results["table"] if (s := axis(row, a, b))]
    lines += late_sentences(results["late_data"], a, b)
    sustained = results.get("sustainable_rate", {})
    if sustained.get("measured"):
        per = sustained["per_design"]
        lines.append(
            "Sustainable rate (the highest rate whose lag stayed flat): "
            + "; ".join(sustained_phrase(d, per[d]) for d in (a, b) if d in per)
            + "."
        )
    return lines


def sustained_phrase(design: str, found: dict[str, Any]) -> str:
    """``kappa 4,000 events/s (8,000 failed)``, or that no rate tried held.

    A rate the generator could not send on schedule is the machine's limit, not a
    failure of the design, and is named as such.
    """
    held, failed = found["highest"], found["lowest_failed"]
    behind = found.get("generator_fell_behind_at")
    if failed:
        failed_text = f"{failed['median']:,.0f} failed"
    elif behind:
        failed_text = (
            f"at {behind['median']:,.0f} the generator fell behind: the machine's limit, "
            "not the design's"
        )
    else:
        failed_text = "no rate tried failed"
    if not held:
        return f"{design}: none of the rates tried held ({failed_text})"
    return f"{design} {held['median']:,.0f} events/s ({failed_text})"


def scaling_sentences(scaling: dict[str, Any]) -> list[str]:
    """How the time to serve new logic grows with the history, per design."""
    out = []
    for design, fit in scaling["growth"].items():
        points = ", ".join(
            f"{p['events']:,}: {p['seconds']:g} s" for p in scaling["points"][design]
        )
        if fit["exponent"] is None:
            out.append(f"Scaling, {design}: {points} ({fit['reading']}).")
        else:
            out.append(
                f"Scaling, {design}: {points}; time ~ events^{fit['exponent']} ({fit['reading']})."
            )
    return out
