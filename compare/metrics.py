"""Turning observations into the report's figures: pure functions, no Spark, no broker."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from measure.stats import summary
from oracle.records import Event
from serving_layer.alerts import OPEN, AlertRecord
from serving_layer.snapshot import parse_timestamp


def epoch(moment: datetime) -> float:
    """Epoch seconds of a naive-UTC datetime."""
    return moment.replace(tzinfo=UTC).timestamp()


def freshness(
    probes: Sequence[Mapping[str, Any]],
    first_seen: Mapping[int, float],
    excluded: set[int],
    warmup_until: float,
    halves_at: float | None = None,
) -> dict[str, Any]:
    """Processing- and event-time latency of probes through the serving view.

    Args:
        probes: the generator's probes (``id`` = user, ``due``, ``acked``, ``event_time``).
        first_seen: user -> when the serving view first showed the probe's cart line.
        excluded: probe users the contract lets the design leave out as late.
        warmup_until: probes due before this (epoch s) are discarded as warm-up.
        halves_at: also summarise the probes due before and from this moment (epoch s)
            apart (``halves``): where Lambda starts its nightly batch run, so a reader
            sees what the run and its handoff cost the live readers.
    """
    from_ack: list[float] = []
    halves: dict[str, list[float]] = {"before": [], "from": []}
    from_due: list[float] = []
    event_time: list[float] = []
    negative = 0
    timeline: list[tuple[float, float, float | None]] = []
    unseen, unseen_late, warm = 0, 0, 0
    for probe in probes:
        user = int(probe["id"])
        if probe["due"] < warmup_until:
            warm += 1
            continue
        seen = first_seen.get(user)
        if seen is None:
            unseen_late += user in excluded
            unseen += user not in excluded
            continue
        ack = probe.get("acked") or probe["sent"]
        for values, start in ((from_ack, ack), (from_due, probe["due"])):
            if seen - start < 0:
                negative += 1
            else:
                values.append(seen - start)
        if halves_at is not None and seen >= ack:
            halves["before" if probe["due"] < halves_at else "from"].append(seen - ack)
        if probe.get("event_time") is not None:
            event_time.append(seen - probe["event_time"])
        # a probe on a file's own clock has no event-time latency (its time is the file's)
        moment = probe.get("event_time")
        lag = round(seen - moment, 3) if moment is not None else None
        timeline.append((round(probe["due"], 3), round(seen - ack, 3), lag))
    return {
        "probes": len(probes),
        "discarded_warm_up": warm,
        "seen": len(from_ack),
        "never_seen_excluded_as_late": unseen_late,
        "never_seen_unexplained": unseen,
        "negative_values": negative,
        "processing_time_s": summary(from_ack),
        "processing_time_from_due_s": summary(from_due),
        "event_time_s": summary(event_time),
        "timeline": sorted(timeline, key=lambda t: t[:2]),
    } | (
        {}
        if halves_at is None
        else {
            "halves": {
                "at": round(halves_at, 3),
                "before": summary(halves["before"]),
                "from": summary(halves["from"]),
            }
        }
    )


def windows_over_time(
    polls: Sequence[tuple[float, Mapping[tuple, tuple]]],
    final: Mapping[tuple, tuple],
) -> dict[str, Any]:
    """Per window: time from its end to its first answer and to its correct answer.

    A window's answer is *correct* from the first poll after which every poll showed the
    oracle's row. ``final`` maps ``(window_start, category)`` to ``(orders, revenue)``.
    """
    per_window = []
    for key, want in sorted(final.items()):
        first = next((t for t, rows in polls if key in rows), None)
        correct = None
        for t, rows in reversed(polls):
            if rows.get(key) != want:
                break
            correct = t
        per_window.append(
            {
                "window": [str(key[0]), key[1]],
                "start": epoch(key[0]),
                "first": first,
                "correct": correct,
            }
        )
    return {"windows": per_window}


def window_delays(windows: Sequence[Mapping[str, Any]], size_s: float) -> dict[str, Any]:
    """Summaries of first-answer and correct-answer delays after each window's end."""
    first, correct, never = [], [], 0
    for w in windows:
        end = w["start"] + size_s
        if w["first"] is not None:
            first.append(w["first"] - end)
        if w["correct"] is None:
            never += 1
        else:
            correct.append(w["correct"] - end)
    return {
        "windows": len(windows),
        "first_answer_after_window_end_s": summary(first),
        "correct_answer_after_window_end_s": summary(correct),
        "never_correct_by_end": never,
    }


def handoff(
    probe_quantity: Mapping[int, int],
    probes: Iterable[int],
    excluded: set[int],
    straddling: set[int],
) -> dict[str, int]:
    """Probe events counted twice or missed (quantity 1 each: the served line says how often).

    ``straddling``: probes read by a micro-batch whose range contains the batch cutoff.
    """
    once = double = missed = late = 0
    at_cutoff = {"probes": 0, "double": 0, "missed": 0}
    for user in probes:
        quantity = probe_quantity.get(user, 0)
        if quantity == 0 and user in excluded:
            late += 1
            continue
        once += quantity == 1
        double += quantity > 1
        missed += quantity == 0
        if user in straddling:
            at_cutoff["probes"] += 1
            at_cutoff["double"] += quantity > 1
            at_cutoff["missed"] += quantity == 0
    return {
        "probes": once + double + missed + late,
        "counted_once": once,
        "counted_twice_or_more": double,
        "missed": missed,
        "excluded_as_late": late,
        "probes_in_the_micro_batch_at_the_cutoff": at_cutoff["probes"],
        "double_at_cutoff": at_cutoff["double"],
        "missed_at_cutoff": at_cutoff["missed"],
    }


def alert_figures(
    records: Sequence[AlertRecord],
    events: Iterable[Event],
    window: timedelta,
    since: float,
) -> dict[str, Any]:
    """Alerts published (``open``) and retracted, and how long an alert took to show.

    An alert's delay runs from the log append of the last purchase in its burst's interval
    ``[burst_at - window, burst_at]`` (the one that completed it in the log) to the
    alert's own append in the alerts topic; it is counted for the bursts completed at or
    after ``since`` (epoch s: the live phase, not the history a first run served whole).
    """
    appended: dict[int, list[tuple[datetime, float]]] = defaultdict(list)
    for event in events:
        if event.event_type == "purchase" and event.append_time is not None:
            appended[event.user_id].append((event.event_time, epoch(event.append_time)))
    opened = [r for r in records if r.alert.status == OPEN]
    delays = []
    for record in opened:
        at = parse_timestamp(record.alert.burst_at)
        inside = [t for when, t in appended[record.alert.user_id] if at - window <= when <= at]
        if inside and max(inside) >= since:
            delays.append(record.appended_ms / 1000 - max(inside))
    return {
        "published": len(opened),
        "retracted": len(records) - len(opened),
        "delay_s": summary(delays),
    }
