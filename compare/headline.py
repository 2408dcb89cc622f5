"""The verdict a person reads in a minute: one sentence per decision, ties left out.

``compare.verdict`` judges every metric on its own; this groups those judgements by what a
reader decides on (correctness, freshness, time to serve new logic, late data, cost,
operations) and keeps only the groups where a design won, each figure with its spread.
Every number comes from ``results.json`` (the summary table and the late-data table).
"""

from __future__ import annotations

from typing import Any

from compare.verdict import MARGIN

#: The decisions, in the order a reader weighs them, and the table rows behind each.
GROUPS: list[tuple[str, tuple[str, ...]]] = [
    (
        "Correctness",
        (
            "unexplained differences",
            "rows != oracle, end of live",
            "rows != oracle, after change",
            "re-sends counted twice, end of live",
            "dropped by a watermark, end of live",
            "handoff: counted twice or missed",
            "windows never correct in live phase",
            "window correct after its end, p50",
            "alerts retracted",
        ),
    ),
    (
        "Freshness",
        (
            "freshness p50 (ack -> visible)",
            "freshness p99 (ack -> visible)",
            "event-time latency p99",
            "alert delay p50 (last purchase -> alert)",
            "alert delay p99 (last purchase -> alert)",
        ),
    ),
    ("Time to serve new logic", ("time to serve new logic", "new logic throughput")),
    (
        "Cost",
        (
            "CPU per million records",
            "peak memory (all processes)",
            "peak bytes kept",
            "sustainable rate (lag flat)",
        ),
    ),
    ("Operations", ("tables + checkpoints to operate", "jobs run")),
]

#: Figures named per winner in one sentence; the rest are in the tables.
MOST = 2

#: Short names for the sentences (the tables keep the full ones).
SHORT = {
    "unexplained differences": "unexplained rows",
    "rows != oracle, end of live": "rows off the oracle at the end of live",
    "rows != oracle, after change": "rows off the oracle after the change",
    "re-sends counted twice, end of live": "re-sends counted twice",
    "dropped by a watermark, end of live": "events a watermark dropped",
    "handoff: counted twice or missed": "handoff probes counted twice or missed",
    "windows never correct in live phase": "windows never correct",
    "window correct after its end, p50": "window correct after its end (p50)",
    "freshness p50 (ack -> visible)": "p50",
    "freshness p99 (ack -> visible)": "p99",
    "event-time latency p99": "event-time p99",
    "alerts retracted": "alerts retracted",
    "alert delay p50 (last purchase -> alert)": "alert delay p50",
    "alert delay p99 (last purchase -> alert)": "alert delay p99",
    "time to serve new logic": "serving it took",
    "new logic throughput": "replay rate",
    "CPU per million records": "CPU per M records",
    "peak memory (all processes)": "peak memory",
    "peak bytes kept": "peak storage",
    "sustainable rate (lag flat)": "sustainable rate",
    "tables + checkpoints to operate": "tables + checkpoints",
    "jobs run": "jobs",
}


def _fmt(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"


def _value(stat: dict[str, Any]) -> str:
    """``20,759`` with one run, ``28,625 [27,900-29,100]`` with several (the range)."""
    if stat["n"] > 1 and stat["min"] != stat["max"]:
        return f"{_fmt(stat['median'])} [{_fmt(stat['min'])}-{_fmt(stat['max'])}]"
    return _fmt(stat["median"])


def judge(row: dict[str, Any], a: str, b: str) -> dict[str, Any] | None:
    """The winner of one row and by how much, or None for a tie or a missing figure.

    The rule is ``compare.verdict.axis``'s: with several seeds the ranges must not
    overlap; with one run the medians must differ by more than :data:`MARGIN`.
    """
    x, y = row.get(a), row.get(b)
    if not x or not y or x.get("median") is None or y.get("median") is None:
        return None
    mx, my = x["median"], y["median"]
    if x["n"] > 1 and y["n"] > 1:
        apart = x["max"] < y["min"] or y["max"] < x["min"]
    else:
        big = max(abs(mx), abs(my))
        apart = big > 0 and abs(mx - my) / big > MARGIN
    if not apart:
        return None
    winner = a if (mx < my) == row["lower_is_better"] else b
    best, worst = (x, y) if winner == a else (y, x)
    vb, vw = best["median"], worst["median"]
    gap = max(vb, vw) / min(vb, vw) if min(vb, vw) > 0 else None
    return {"winner": winner, "best": best, "worst": worst, "gap": gap, "row": row}


def _phrase(j: dict[str, Any]) -> str:
    row = j["row"]
    unit = "" if row["unit"] == "count" else f" {row['unit']}"
    name = SHORT.get(row["metric"], row["metric"])
    return f"{name} {_value(j['best'])} vs {_value(j['worst'])}{unit}"


def _basis(judged: list[dict[str, Any]]) -> str:
    n = min(min(j["best"]["n"], j["worst"]["n"]) for j in judged)
    if n > 1:
        return f"medians [ranges] of {n} seeds"
    return f"one run, gap over {MARGIN:.0%}, no spread"


def group_sentence(name: str, judged: list[dict[str, Any]]) -> str:
    """One decision's sentence: who is ahead on which figures, and on what basis."""
    winners = sorted({j["winner"] for j in judged}, key=lambda w: judged[0]["winner"] != w)
    parts = []
    for w in winners:
        mine = sorted((j for j in judged if j["winner"] == w), key=lambda j: -(j["gap"] or 0))
        more = f" (+{len(mine) - MOST} more)" if len(mine) > MOST else ""
        parts.append(f"{w} ahead, " + ", ".join(_phrase(j) for j in mine[:MOST]) + more)
    return f"{name}: " + "; but ".join(parts) + f" ({_basis(judged)})."


def late_sentence(results: dict[str, Any], a: str, b: str) -> str | None:
    """What the designs lost for good, at the smallest lateness where they differ."""
    late = results.get("late_data") or {}
    pairs = [
        (ra, rb)
        for ra, rb in zip(late.get(a, []), late.get(b, []), strict=False)
        if ra["excluded_for_good"] != rb["excluded_for_good"]
    ]
    if not pairs:
        return None
    ra, rb = pairs[0]
    keeper, loser = (a, b) if ra["excluded_for_good"] < rb["excluded_for_good"] else (b, a)
    kept, lost = (ra, rb) if keeper == a else (rb, ra)
    share = lost["excluded_for_good"] / max(lost["unique_events"], 1)
    seeds = (results.get("options") or {}).get("repeat", 1)
    basis = f"medians of {seeds} seeds" if seeds > 1 else "one run"
    last = late[loser][-1]
    tail = (
        f", {last['excluded_for_good']:g} at {last['allowed_lateness']}" if last is not lost else ""
    )
    return (
        f"Late data: {keeper} lost {kept['excluded_for_good']:g} events for good; {loser} "
        f"lost {lost['excluded_for_good']:g} ({share:.2%} of the log) at "
        f"{ra['allowed_lateness']} of allowed lateness{tail} ({basis})."
    )


def scaling_sentence(scaling: dict[str, Any]) -> str:
    """How each design's time to serve new logic grows with the history, in one sentence."""
    parts = []
    for design, fit in scaling["growth"].items():
        points = scaling["points"][design]
        span = f"{points[0]['seconds']:.3g} s at {points[0]['events']:,} events to " + (
            f"{points[-1]['seconds']:.3g} s at {points[-1]['events']:,}"
        )
        power = f", ~events^{fit['exponent']}" if fit["exponent"] is not None else ""
        parts.append(f"{design} {span}{power}")
    return "Scaling: " + "; ".join(parts) + " (one run per size)."


def start_up_sentence(results: dict[str, Any]) -> str | None:
    """Says so when a run's live phase never reached steady micro-batches (compare.steadiness)."""
    unsteady: dict[str, list[str]] = {}
    for run in results.get("runs", []):
        steady = (run.get("live") or {}).get("steadiness")
        if steady and not steady["steady"]:
            unsteady.setdefault(run["design"], steady["why_not"])
    if not unsteady:
        return None
    why = "; ".join(f"{design}: {', '.join(reasons)}" for design, reasons in unsteady.items())
    return (
        f"Start-up: the freshness figures describe start-up, not steady state ({why}); "
        "a longer live phase (--live-seconds) measures the designs at work."
    )


def floor_sentence(results: dict[str, Any]) -> str | None:
    """Each design's freshness as a multiple of the views floor's, measured in the same run."""
    floor = results.get("floor") or {}
    if not floor.get("measured") or not floor.get("freshness_p50_s"):
        return None
    times = [
        f"{design} {' and '.join(f'{x:g}x at {pct}' for pct, x in mine.items())}"
        for design, mine in floor["times_the_floor"].items()
        if mine
    ]
    if not times:
        return None
    p99 = floor.get("freshness_p99_s")
    figures = f"p50 {_value(floor['freshness_p50_s'])} s" + (
        f", p99 {_value(p99)} s" if p99 else ""
    )
    return (
        "Against the views floor (read, decode, de-duplicate, compute the views, one commit: "
        f"{figures} here): " + "; ".join(times) + "."
    )


def ties(results: dict[str, Any]) -> list[str]:
    """The table rows measured for both designs where neither won."""
    designs = results["designs"]
    if len(designs) < 2:
        return []
    a, b = designs[0], designs[1]
    return [
        row["metric"]
        for row in results["table"]
        if row.get(a) and row.get(b) and judge(row, a, b) is None
    ]


def headline(results: dict[str, Any]) -> list[str]:
    """The verdict's sentences, at most one per decision (plus validity and scaling)."""
    designs = results["designs"]
    if len(designs) < 2:
        return ["Only one design ran: nothing to compare."]
    a, b = designs[0], designs[1]
    out = []
    if not results["valid"]:
        out.append(
            "INVALID RUN: the load generator fell behind its schedule; "
            "its latency figures are not results."
        )
    rows = {row["metric"]: row for row in results["table"]}
    for name, metrics in GROUPS:
        judged = [j for m in metrics if m in rows and (j := judge(rows[m], a, b))]
        if judged:
            out.append(group_sentence(name, judged))
        if name == "Freshness":
            out += [line for line in (floor_sentence(results), start_up_sentence(results)) if line]
        if name == "Time to serve new logic":
            if (results.get("scaling") or {}).get("measured"):
                out.append(scaling_sentence(results["scaling"]))
            if late := late_sentence(results, a, b):
                out.append(late)
    if len(out) == (0 if results["valid"] else 1):
        out.append("No figure separates the two designs in this run: see the tables.")
    return out
