"""From the runs to the figures a reader compares: medians and spreads per design."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from compare.options import CompareOptions
from compare.verdict import verdict
from measure.stats import median_spread

#: (name, unit, lower is better (None: a count no design wins), how to read it from one run:
#: NaN when not measured)
METRICS: list[tuple[str, str, bool | None, Callable[[dict], float]]] = [
    (
        "freshness p50 (ack -> visible)",
        "s",
        True,
        lambda r: _get(r, "freshness", "processing_time_s", "p50"),
    ),
    (
        "freshness p99 (ack -> visible)",
        "s",
        True,
        lambda r: _get(r, "freshness", "processing_time_s", "p99"),
    ),
    (
        "freshness p99, live phase's first half",
        "s",
        True,
        lambda r: _get(r, "freshness", "halves", "before", "p99"),
    ),
    (
        "freshness p99, second half (Lambda's nightly run in it)",
        "s",
        True,
        lambda r: _get(r, "freshness", "halves", "from", "p99"),
    ),
    ("event-time latency p99", "s", True, lambda r: _get(r, "freshness", "event_time_s", "p99")),
    (
        "unexplained differences",
        "rows",
        True,
        lambda r: (
            _get(r, "correctness", "end_of_live", "unexplained")
            + _get(r, "correctness", "after_change", "unexplained")
        ),
    ),
    (
        "re-sends counted twice, end of live",
        "events",
        True,
        lambda r: _get(r, "correctness", "end_of_live", "duplicates", "not_dropped"),
    ),
    (
        "dropped by a watermark, end of live",
        "events",
        True,
        lambda r: _get(r, "correctness", "end_of_live", "duplicates", "watermark_drops"),
    ),
    ("rows != oracle, end of live", "rows", True, lambda r: _off(r, "end_of_live")),
    ("rows != oracle, after change", "rows", True, lambda r: _off(r, "after_change")),
    (
        "window correct after its end, p50",
        "s",
        True,
        lambda r: _get(r, "correctness_over_time", "correct_answer_after_window_end_s", "p50"),
    ),
    (
        "windows never correct in live phase",
        "windows",
        True,
        lambda r: _get(r, "correctness_over_time", "never_correct_by_end"),
    ),
    (
        "handoff: counted twice or missed",
        "probes",
        True,
        lambda r: _get(r, "handoff", "counted_twice_or_more") + _get(r, "handoff", "missed"),
    ),
    (
        "alerts published, end of live",
        "alerts",
        None,
        lambda r: _get(r, "alerts", "live", "published"),
    ),
    (
        "alerts retracted",
        "alerts",
        True,
        lambda r: (
            _get(r, "alerts", "live", "retracted") + _get(r, "alerts", "after_change", "retracted")
        ),
    ),
    (
        "alert delay p50 (last purchase -> alert)",
        "s",
        True,
        lambda r: _get(r, "alerts", "live", "delay_s", "p50"),
    ),
    (
        "alert delay p99 (last purchase -> alert)",
        "s",
        True,
        lambda r: _get(r, "alerts", "live", "delay_s", "p99"),
    ),
    ("time to serve new logic", "s", True, lambda r: _get(r, "new_logic", "seconds")),
    ("new logic throughput", "records/s", False, lambda r: _get(r, "new_logic", "events_per_s")),
    (
        "CPU per million records",
        "CPU-s",
        True,
        lambda r: _get(r, "cost", "cpu_seconds") / (_get(r, "log", "events_records") / 1e6),
    ),
    ("peak memory (all processes)", "MiB", True, lambda r: _get(r, "cost", "peak_rss_mib")),
    (
        "bytes kept at the end",
        "MB",
        True,
        lambda r: (
            _get(r, "storage", "kept_end", "delta_tables") / 1e6
            + _get(r, "storage", "kept_end", "checkpoints") / 1e6
        ),
    ),
    ("peak bytes kept", "MB", True, lambda r: _get(r, "storage", "peak_bytes") / 1e6),
    (
        "tables + checkpoints to operate",
        "count",
        True,
        lambda r: _get(r, "complexity", "tables") + _get(r, "complexity", "checkpoints"),
    ),
    ("jobs run", "count", True, lambda r: len(_get(r, "complexity", "jobs_run"))),
    (
        "sustainable rate (lag flat)",
        "events/s",
        False,
        lambda r: _get(r, "sustainable_rate", "highest_sustainable_rate"),
    ),
]


def _get(run: dict, *path: str) -> Any:
    value: Any = run
    for key in path:
        value = (value or {}).get(key) if isinstance(value, dict) else None
    return value if value is not None else float("nan")


def _off(run: dict, phase: str) -> float:
    views = _get(run, "correctness", phase, "views")
    if not isinstance(views, dict):
        return float("nan")
    return sum(v["different"] + v["missing"] + v["extra"] for v in views.values())


def late_table(runs: Sequence[dict]) -> dict[str, list[dict[str, Any]]]:
    """Per design and allowed lateness: median events excluded for good and absorbed."""
    out: dict[str, list[dict[str, Any]]] = {}
    for design in sorted({r["design"] for r in runs}):
        mine = [r for r in runs if r["design"] == design]
        rows = []
        for i, first in enumerate(mine[0]["late_data"]["live_lane"]):

            def med(key: str, i: int = i, mine: list[dict] = mine) -> float:
                return statistics.median(r["late_data"]["live_lane"][i][key] for r in mine)

            rows.append(
                {
                    "allowed_lateness": first["allowed_lateness"],
                    "late_in_streaming": med("late_in_streaming"),
                    "absorbed_later": med("absorbed_later"),
                    "excluded_for_good": med("excluded_for_good"),
                    "unique_events": statistics.median(r["log"]["unique_events"] for r in mine),
                }
            )
        out[design] = rows
    return out


def lines_of_code(runs: Sequence[dict]) -> dict[str, Any]:
    """Lines of the platform functions each design called; what both called, counted once."""
    called = {r["design"]: r["complexity"]["functions"] for r in runs}
    if len(called) < 2:
        return {"per_design": {d: sum(f.values()) for d, f in called.items()}}
    designs = sorted(called)
    shared = set.intersection(*(set(f) for f in called.values()))
    size = {name: lines for f in called.values() for name, lines in f.items()}
    return {
        "shared_lines": sum(size[n] for n in shared),
        "shared_functions": len(shared),
        "own_lines": {d: sum(v for n, v in called[d].items() if n not in shared) for d in designs},
        "own_functions": {d: sorted(n for n in called[d] if n not in shared) for d in designs},
        "note": "lines holding code in the platform functions each design's process called "
        "(the harness and the oracle left out); functions both called are shown once, as shared",
    }


def _sustained(runs: Iterable[dict]) -> dict[str, Any]:
    """Medians of the highest rate that held and the lowest that failed, over the seeds."""
    found = [r["sustainable_rate"] for r in runs]
    return {
        "highest": median_spread(
            [f["highest_sustainable_rate"] for f in found if f["highest_sustainable_rate"]]
        ),
        "lowest_failed": median_spread(
            [f["lowest_failed_rate"] for f in found if f.get("lowest_failed_rate")]
        ),
        "generator_fell_behind_at": median_spread(
            [f["generator_fell_behind_at"] for f in found if f.get("generator_fell_behind_at")]
        ),
    }


def growth(points: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """How time grows with history: the exponent k of ``seconds ~ events^k`` (log-log fit)."""
    import math

    from measure.stats import slope

    pairs = [(math.log(p["events"]), math.log(p["seconds"])) for p in points if p["seconds"] > 0]
    if len(pairs) < 2:
        return {"exponent": None, "reading": "not enough points"}
    k = slope(pairs)
    if k < 0.2:
        reading = "flat: fixed costs (start-up, commits) dominate at these sizes"
    elif k < 0.8:
        reading = "sub-linear"
    else:
        reading = "about linear" if k <= 1.2 else "super-linear"
    return {"exponent": round(k, 2), "reading": reading}


#: The freshness figures held against the views floor: (table row, the floor's percentile).
AGAINST_FLOOR = (
    ("freshness p50 (ack -> visible)", "p50"),
    ("freshness p99 (ack -> visible)", "p99"),
)


def floor_figures(
    floors: list[dict], table: list[dict[str, Any]], designs: list[str], poll_s: float
) -> dict[str, Any]:
    """The views floor's freshness, and each design's as a multiple of it (medians of seeds)."""
    if not floors:
        return {"measured": False, "detail": "not run: --no-floor, or your own files"}
    rows = {row["metric"]: row for row in table}
    figures: dict[str, Any] = {"measured": True, "times_the_floor": {d: {} for d in designs}}
    for metric, pct in AGAINST_FLOOR:
        values = [_get(r, "freshness", "processing_time_s", pct) for r in floors]
        floor = median_spread([v for v in values if v == v])
        figures[f"freshness_{pct}_s"] = floor
        for design in designs:
            mine = rows[metric].get(design)
            if floor and mine and floor["median"] > 0:
                figures["times_the_floor"][design][pct] = round(mine["median"] / floor["median"], 1)
    batches = [r["live"]["median_micro_batch_s"] for r in floors]
    figures["median_micro_batch_s"] = median_spread([b for b in batches if b is not None])
    figures["probes_never_seen"] = sum(r["freshness"]["never_seen_unexplained"] for r in floors)
    figures["steadiness"] = [r["live"]["steadiness"] for r in floors]
    figures["cost"] = [r.get("cost") for r in floors]
    figures["note"] = (
        "the views floor reads, decodes, de-duplicates, computes every view over the "
        "micro-batch and commits once: a probe is visible when its micro-batch committed. "
        f"The designs' figures also hold their serving layer and the watcher's poll (every "
        f"{poll_s:g} s)."
    )
    return figures


def assemble(
    runs: list[dict],
    opts: CompareOptions,
    info: dict[str, Any],
    floors: list[dict] | None = None,
) -> dict[str, Any]:
    """``results.json``: every number the report shows, the runs, the machine, the verdict."""
    designs = [d for d in opts.order if any(r["design"] == d for r in runs)]
    table = []
    for name, unit, lower, read in METRICS:
        row: dict[str, Any] = {"metric": name, "unit": unit, "lower_is_better": lower}
        for design in designs:
            values = [read(r) for r in runs if r["design"] == design]
            values = [v for v in values if v == v]  # drop NaN (not measured)
            row[design] = median_spread(values)
        table.append(row)
    valid = all(r["live"]["valid"] for r in runs)
    results: dict[str, Any] = {
        "machine": info,
        "options": opts.model_dump(mode="json"),
        "ran_first": opts.order[0],
        "designs": designs,
        "valid": valid,
        "invalid_runs": [
            {
                "design": r["design"],
                "seed": r["seed"],
                "schedule_lag": r["live"]["generator"]["schedule_lag"],
            }
            for r in runs
            if not r["live"]["valid"]
        ],
        "table": table,
        "late_data": late_table(runs),
        "lines_of_code": lines_of_code(runs),
        "sustainable_rate": {"measured": False, "detail": "not measured: run with --sustainable"},
        "scaling": {"measured": False, "detail": "not measured: run with --scaling N,N,..."},
        "runs": runs,
        "floor": floor_figures(floors or [], table, designs, opts.poll_s),
    }
    rates = {r["design"]: r["sustainable_rate"] for r in runs if "sustainable_rate" in r}
    if rates:
        results["sustainable_rate"] = {
            "measured": True,
            "per_design": {d: _sustained(r for r in runs if r["design"] == d) for d in rates},
            "criterion": next(iter(rates.values()))["criterion"],
        }
    results["verdict"] = verdict(results)
    return results
