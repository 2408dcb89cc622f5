"""One design's scenario over your files and views: ``python -m compare.own_design JOB.json``.

The same phases as the shop scenario (:mod:`compare.design`): the history is already in
the design's topic (replayed as ``lk replay`` does); the design serves it; the live file
is sent by the load generator in its own order at the given rate, with probes added
(:mod:`compare.own_files`), while a watcher reads the serving view and Lambda runs its
nightly batch halfway; the views are checked against the files (:mod:`compare.own_check`);
then the logic change (a setting of your views) is served and checked again. The served
rows are written beside the figures, for the parent to report where the designs disagree.
"""

from __future__ import annotations

import json
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

from compare.called import CalledFunctions
from compare.design import (
    HARNESS,
    REPO,
    DiskPeak,
    lane_batches,
    late_fates,
    live_figures,
    new_logic,
    operations,
    run_live,
    say,
    timed,
)
from compare.metrics import handoff
from compare.options import CompareOptions
from compare.own_check import (
    check_view,
    file_events,
    late_ids,
    log_events,
    per_window,
    rule_failures,
    window_shape,
)
from compare.own_files import PROBE, live_rows, marker_fields, seconds_for
from compare.own_watch import probe_look
from config.settings import load_settings
from designs.platform import Platform, build
from lake.tables import Tables
from measure.generator import SteadyPlan
from measure.machine import local_dir
from speed_layer import lane_log
from speed_layer.lane import find_lane
from speed_layer.metrics import dedup_outcome, read_metrics


def run(job: dict[str, Any]) -> dict[str, Any]:
    """The whole scenario of one design over your files; the figures as a dict."""
    with CalledFunctions(REPO, HARNESS) as called:
        return _scenario(job, called)


def _served(spark: Any, platform: Platform) -> dict[str, list[dict[str, Any]]]:
    return {
        v.name: [r.asDict() for r in platform.read(spark, v.name).collect()]
        for v in platform.registry
    }


def _late_counted(
    spark: Any, platform: Platform, served: dict[str, list[dict[str, Any]]]
) -> dict[str, list[str]]:
    """View -> window starts holding events the serving lane counted (and kept) as late."""
    lane = find_lane(spark, platform.tables, platform.streaming_lane_name(spark))
    frame = lane_log.read(spark, lane, lane_log.LATE) if lane else None
    if frame is None:
        return {}
    time_field = platform.contract.time_field
    rows = frame.select("view", time_field).collect()
    out: dict[str, list[str]] = {}
    for view, rows_of_view in served.items():
        shape = window_shape(rows_of_view)
        times = [r[1] for r in rows if r[0] == view and r[1] is not None]
        if shape and times:
            out[view] = sorted(str(s) for s in per_window(times, *shape))
    return out


def check(
    spark: Any,
    platform: Platform,
    opts: CompareOptions,
    log: tuple[list, int],
    expected: Any,
    rejected: set[str],
) -> tuple[dict[str, Any], dict[str, set[str]], list, dict[int, int] | None, dict]:
    """Every view against the files; the contract's late ids, the lane's batches, the cutoff."""
    unique, valid = log
    views = platform.settings.views
    batches, rows = lane_batches(spark, platform)
    cutoff = platform.served_cutoff(spark)
    names = platform.registry.names()
    late = late_ids(unique, batches, names, views.lateness, cutoff)
    served = _served(spark, platform)
    counted: dict[str, int] = {}
    for row in rows:
        for view, n in row.late_rows.items():
            counted[view] = counted.get(view, 0) + n
    result: dict[str, Any] = {
        "views": {},
        "late_by_contract": {v: len(ids) for v, ids in late.items()},
        "late_counted_by_lanes": counted,
    }
    contract = platform.contract
    for view in platform.registry:
        totals = None
        if view.totals is not None:
            kept = expected[~expected[contract.id_field].isin(rejected | late[view.name])]
            totals = _totals(spark, view, kept, platform)
        result["views"][view.name] = check_view(
            served[view.name],
            opts.counts.get(view.name),
            expected,
            contract,
            rejected,
            late[view.name],
            totals,
            key=view.key,
        )
    result["unexplained"] = sum(v["unexplained"] for v in result["views"].values())
    lane = find_lane(spark, platform.tables, platform.streaming_lane_name(spark))
    outcome = dedup_outcome(
        sum(r.deduplicated for r in rows), read_metrics(spark, lane.root) if lane else None
    )
    in_log = valid - len(unique)
    result["duplicates"] = {
        "in_log": in_log,
        "dropped_by_lane": outcome["duplicates"],
        "not_dropped": in_log - outcome["duplicates"],
        "watermark_drops": outcome["watermark_drops"],
    }
    result["cutoff"] = cutoff
    result["micro_batches"] = len(batches)
    return result, late, batches, cutoff, served


def _totals(spark: Any, view: Any, kept: Any, platform: Platform) -> dict[str, Any]:
    """A view's declared totals (your expressions) over the files' rows it must count."""
    from pyspark.sql import functions as F

    contract = platform.contract
    names = [f.name for f in contract.fields if f.name in kept.columns]
    rows = [
        tuple(None if v is None or v != v else str(v) for v in r)
        for r in kept[names].itertuples(index=False)
    ]
    frame = spark.createDataFrame(rows, ", ".join(f"`{n}` STRING" for n in names))
    typed = frame.select(
        *[
            F.col(f"`{f.name}`").cast(f.type).alias(f.name)
            for f in contract.fields
            if f.name in names
        ]
    )
    exprs = view.totals(typed, platform.settings.views)
    [row] = typed.agg(*[e.alias(n) for n, e in exprs.items()]).collect()
    return {n: row[n] if row[n] is not None else 0 for n in exprs}


def live_phase(
    spark: Any, platform: Platform, opts: CompareOptions, plan: SteadyPlan,
    probe: tuple[str, str] | None, workdir: Path,
) -> dict[str, Any]:  # fmt: skip
    """The live file at a steady rate, its probes watched in their view (:func:`run_live`)."""
    view, marker = probe or (platform.registry.names()[0], platform.contract.id_field)
    return run_live(spark, platform, plan, probe_look(view, marker), opts.poll_s, workdir, "rows")


def _scenario(job: dict[str, Any], called: CalledFunctions) -> dict[str, Any]:
    from lake.spark import build_session
    from oracle import consume_all

    opts = CompareOptions.model_validate(job["options"])
    settings = load_settings(**job["settings"])
    design, seed, workdir = settings.mode, job["seed"], Path(job["workdir"])
    history_file, live_file = Path(job["files"][0]), Path(job["files"][1])
    spark = build_session(settings, app_name=f"lk-compare-{design}")
    platform = build(settings)
    contract = platform.contract
    markers = marker_fields(contract, [v.key for v in platform.registry])
    live_set = live_rows(live_file, contract, opts.probe_every, markers)
    probe = next(((v.name, c) for v in platform.registry for c in v.key if c in markers), None)
    plan = SteadyPlan(
        settings.kafka.bootstrap_servers,
        settings.kafka.events_topic,
        rate=opts.rate,
        seconds=seconds_for(len(live_set.records), opts.rate),
        source="compare.own_files:file_source",
        source_args={
            "path": str(live_file),
            "events": settings.events.model_dump(mode="json"),
            "probe_every": opts.probe_every,
            "markers": markers,
        },
        max_schedule_lag_s=opts.max_schedule_lag_s,
    )
    root = local_dir(Tables.of(settings).root)
    result: dict[str, Any] = {"design": design, "seed": seed, "phases": {}}
    with DiskPeak(root) as disk:
        seconds, history = timed(lambda: platform.build_history(spark))
        result["phases"]["history"] = {"seconds": round(seconds, 1), **history}
        say("history", message=f"{history['job']} over the history in {seconds:.1f} s")
        disk.phase = "live"
        live_lane = platform.streaming_lane_name(spark)
        live = live_phase(spark, platform, opts, plan, probe, workdir)
        events = consume_all(settings, settings.kafka.events_topic)
        log = log_events(events, contract)
        expected = file_events([history_file, live_file], contract, live_set.probes)
        rejected = rule_failures(spark, expected, contract)
        live_check, late, batches, _cutoff, served_live = check(
            spark, platform, opts, log, expected, rejected
        )
        say(
            "correctness",
            message=f"end of live phase: {live_check['unexplained']} unexplained differences "
            "from the files",
            unexplained=live_check["unexplained"],
        )
        schedule = live["schedule"]
        late_probes = {
            int(i.removeprefix(PROBE)) for ids in late.values() for i in ids if i.startswith(PROBE)
        }
        quantities: dict[int, int] = {}
        count_column = opts.counts.get(probe[0]) if probe else None
        if probe and count_column:
            for row in served_live[probe[0]]:
                marker = str(row[probe[1]])
                if marker.startswith(PROBE):
                    n = int(marker.removeprefix(PROBE))
                    quantities[n] = quantities.get(n, 0) + int(row[count_column] or 0)
        probes = {int(p["id"]) for p in schedule.probes}
        shape = window_shape(served_live[probe[0]]) if probe else None
        hops = int(shape[0] / shape[1]) if shape else 1
        result |= live_figures(live, late_probes, opts.warmup_s)
        result["live"]["rows_in_live_file"] = live_set.stats.rows
        result["live"]["watch"] |= {
            "view": probe[0] if probe else None,
            "marker_column": probe[1] if probe else None,
        }
        result["freshness"]["probes_are"] = (
            f"a copy of every {opts.probe_every}th valid live row, sent right after it through "
            f"the contract with a new id and {', '.join(markers) or 'no field'} set to "
            f"'{PROBE}N'; seen when view {probe[0] if probe else '-'} shows its row"
        )
        result["correctness_over_time"] = {
            "per_window": [],
            "detail": "not measured on your own views (the probes' freshness is)",
        }
        if quantities or not count_column:
            # a probe is one event: its row counts 1 in each window that holds it
            result["handoff"] = handoff(
                {n: q // hops for n, q in quantities.items()}, probes, late_probes, set()
            )
            if not count_column:
                result["handoff"]["detail"] = "not checked: no count column for the probe view"
        result["correctness"] = {"end_of_live": live_check}
        fresh = result["freshness"]["processing_time_s"] or {}
        say(
            "freshness",
            message=f"ack -> visible through the serving view: p50 {fresh.get('p50')} s, "
            f"p99 {fresh.get('p99')} s over {fresh.get('n', 0)} probes",
        )
        late_windows_live = _late_counted(spark, platform, served_live)

        offsets = len(events)
        platform2, result["new_logic"] = new_logic(spark, settings, opts.change, disk, offsets)
        after, _, batches2, cutoff2, served_after = check(
            spark, platform2, opts, log, expected, rejected
        )
        result["correctness"]["after_change"] = after
        say(
            "correctness",
            message=f"after the change: {after['unexplained']} unexplained differences",
            unexplained=after["unexplained"],
        )
        result["late_data"] = {
            "live_lane": late_data(log[0], batches, opts.lateness_values, None, cutoff2),
            "after_change_lane": late_data(log[0], batches2, opts.lateness_values, None, cutoff2),
            "note": "late_in_streaming: left out by the streaming lane at that lateness (the "
            "contract, from its micro-batches, any view); absorbed_later: below the batch "
            "cutoff served after the change",
        }
        disk.phase = "end"
        kept = disk.sample()

    (workdir / "served.json").write_text(
        json.dumps(
            {
                "end_of_live": served_live,
                "after_change": served_after,
                "late_windows": {
                    "end_of_live": late_windows_live,
                    "after_change": _late_counted(spark, platform2, served_after),
                },
                "keys": {v.name: list(v.key) for v in platform.registry},
            },
            default=str,
        )
    )
    result |= operations(
        settings, disk, kept, [history, live, result["new_logic"]], live_lane, called
    )
    result["log"] = {
        "events_records": offsets,
        "unique_events": len(log[0]),
        "quarantined": offsets - log[1],
        "rejected_by_rules": len(rejected),
    }
    spark.stop()
    return result


def late_data(
    unique: list,
    batches: list,
    values: tuple[str, ...],
    served_cutoff: dict[int, int] | None,
    absorbed_below: dict[int, int] | None,
) -> list[dict[str, Any]]:
    """:func:`late_fates` of your log: events the live lane leaves out of any view."""

    def late_for(lateness: timedelta) -> set[str]:
        return late_ids(unique, batches, ["any"], lambda _v: lateness, served_cutoff)["any"]

    return late_fates(unique, values, late_for, absorbed_below)


def main(argv: list[str]) -> int:
    """``python -m compare.own_design JOB.json``: run, write the job's ``out`` file."""
    job = json.loads(Path(argv[0]).read_text())
    result = run(job)
    Path(job["out"]).write_text(json.dumps(result, default=str))
    say("done", message=f"{result['design']} done")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
