"""One design's scenario, in a process of its own: ``python -m compare.design JOB.json``.

History is already in the design's topic. The process serves it (Lambda: a batch run;
Kappa: version 1), runs the live phase (the generator in a process of its own, the
streaming job, Lambda's nightly batch halfway, a watcher reading the serving view),
checks every view against the oracle, applies the logic change and checks again.
Narrative lines go to stdout as JSON (``{"event": ...}``) for the parent to render;
the figures go to the job's ``out`` file. The parent samples this process tree's CPU
and memory; the generator is excluded by its command line.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import oracle
from compare.called import CalledFunctions
from compare.correctness import compare_rows, keyed
from compare.expected import OracleLog, full_views, late_by_contract
from compare.metrics import (
    alert_figures,
    freshness,
    handoff,
    window_delays,
    windows_over_time,
)
from compare.options import CompareOptions
from compare.steadiness import state_horizons, steadiness
from compare.watch import REVENUE, Look, Served, Watcher, shop_look
from config.settings import Settings, ViewSettings, load_settings, parse_duration
from designs.platform import Platform, build
from lake.tables import Tables
from measure.generator import SteadyGenerator, SteadyPlan
from measure.live import PROBE_BASE
from measure.machine import bytes_kept, local_dir
from oracle.served import served_views
from serving_layer.alerts import read_records
from speed_layer import progress
from speed_layer.lane import find_lane, lane_root
from speed_layer.metrics import dedup_outcome, processed_offsets, read_metrics

REPO = Path(__file__).resolve().parents[1]


def say(event: str, **data: Any) -> None:
    """One narrative line for the parent (JSON on stdout)."""
    print(json.dumps({"event": event, "t": time.time(), **data}, default=str), flush=True)


class DiskPeak:
    """Bytes the design keeps, sampled in a thread; the peak and where it happened."""

    def __init__(self, root: Path | None, interval: float = 2.0) -> None:
        self.root, self.interval = root, interval
        self.phase = "history"
        self.peak: dict[str, Any] = {"bytes": 0, "phase": None}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def sample(self) -> dict[str, int]:
        """Bytes kept now (and the peak so far updated)."""
        kept = bytes_kept(self.root)
        total = kept["delta_tables"] + kept["checkpoints"] + kept["other"]
        if total > self.peak["bytes"]:
            self.peak = {"bytes": total, "phase": self.phase}
        return kept

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()

    def __enter__(self) -> DiskPeak:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=30)


def changed(settings: Settings, change: dict[str, Any]) -> Settings:
    """``settings`` with view settings changed (the logic change).

    ``SETTING`` is a field of the view settings; ``VIEW.SETTING`` one of your own view's
    ``options`` (what its module reads with ``settings.option(VIEW, SETTING, default)``).
    """
    dumped = settings.views.model_dump()
    options = {view: dict(values) for view, values in dumped.get("options", {}).items()}
    for name, value in change.items():
        view, dot, setting = name.partition(".")
        if dot:
            options.setdefault(view, {})[setting] = value
        else:
            dumped[name] = value
    views = ViewSettings.model_validate(dumped | {"options": options})
    return settings.model_copy(update={"views": views})


def lane_batches(spark: Any, platform: Platform) -> tuple[list[oracle.MicroBatch], Any]:
    """The serving lane's micro-batches (offset ranges, cutoffs) and its progress rows."""
    lane = find_lane(spark, platform.tables, platform.streaming_lane_name(spark))
    rows = (
        [r for r in progress.history(spark, lane) if r.kind == progress.MICRO_BATCH] if lane else []
    )
    return [oracle.MicroBatch(r.start_offsets, r.end_offsets, r.cutoff) for r in rows], rows


def check(
    spark: Any, platform: Platform, log: OracleLog
) -> tuple[dict[str, Any], dict[str, set[str]], list[oracle.MicroBatch], dict[int, int] | None]:
    """Every view as served against the oracle, differences explained by the contract."""
    views = platform.settings.views
    batches, rows = lane_batches(spark, platform)
    cutoff = platform.served_cutoff(spark)
    late = late_by_contract(log, batches, views.lateness)
    full = full_views(log, views)
    # the live phase sends no catalog change: the batch run and the speed lane join one catalog
    catalog = log.catalog if cutoff is None else {"batch": log.catalog, "speed": log.catalog}
    allowed = served_views(log.events, catalog, views, batches, cutoff, log.history)
    cut = cutoff or {}
    late_above = {
        v: sum(1 for e in log.unique if e.event_id in ids and e.offset >= cut.get(e.partition, 0))
        for v, ids in late.items()
    }
    counted: dict[str, int] = {}
    for row in rows:
        for view, n in row.late_rows.items():
            counted[view] = counted.get(view, 0) + n
    result: dict[str, Any] = {
        "views": {},
        "late_by_contract": late_above,
        "late_counted_by_lanes": counted,
    }
    for view in platform.registry:
        served = [r.asDict() for r in platform.read(spark, view.name).collect()]
        result["views"][view.name] = compare_rows(
            served, full[view.name], allowed[view.name], view.key
        )
    result["unexplained"] = sum(v["unexplained"] for v in result["views"].values())
    result["duplicates"] = duplicates(spark, platform, log, rows)
    result["cutoff"] = cutoff
    result["micro_batches"] = len(batches)
    return result, late, batches, cutoff


def duplicates(
    spark: Any, platform: Platform, log: OracleLog, rows: list[progress.BatchProgress]
) -> dict[str, int]:
    """Re-sends in the log (the oracle's count) against what the serving lane dropped.

    ``not_dropped``: re-sends the lane let through, counted twice (0 under the contract);
    ``watermark_drops``: records a de-duplication watermark dropped unseen (0 unless
    ``stream.dedup_horizon`` is set). Neither may differ from 0 without showing here.
    """
    in_log = len(log.events) - log.quarantined - len(log.unique)
    lane = find_lane(spark, platform.tables, platform.streaming_lane_name(spark))
    metrics = read_metrics(spark, lane.root) if lane else None
    outcome = dedup_outcome(sum(r.deduplicated for r in rows), metrics)
    return {
        "in_log": in_log,
        "dropped_by_lane": outcome["duplicates"],
        "not_dropped": in_log - outcome["duplicates"],
        "watermark_drops": outcome["watermark_drops"],
    }


def wait_caught_up(spark: Any, platform: Platform, timeout: float) -> bool:
    """Until the serving lane has processed the log end (its newest metrics say so)."""
    from event_log.topics import end_offsets

    settings = platform.settings
    topic = settings.kafka.events_topic
    target = end_offsets(settings, topic)
    root = lane_root(platform.tables, platform.streaming_lane_name(spark))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done = processed_offsets(read_metrics(spark, root), topic) or {}
        if all(done.get(p, 0) >= o for p, o in target.items()):
            return True
        time.sleep(1)
    return False


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    """Seconds ``fn`` took, and its result."""
    started = time.perf_counter()
    result = fn()
    return time.perf_counter() - started, result


def operations(
    settings: Settings,
    disk: DiskPeak,
    kept: dict[str, int],
    phases: list[dict[str, Any]],
    live_lane: str,
    called: CalledFunctions,
) -> dict[str, Any]:
    """What a design leaves to operate: storage kept and at its peak, jobs, tables, code.

    ``phases``: the history's, the live phase's and the logic change's results, in order
    (each names the jobs it ran: ``job``, ``nightly``, ``jobs``).
    """
    from measure.machine import topic_bytes

    history, live, done = phases
    return {
        "storage": {
            "kept_end": kept,
            "peak_bytes": disk.peak["bytes"],
            "peak_phase": disk.peak["phase"],
            "log_bytes": topic_bytes(settings, settings.kafka.events_topic),
        },
        "complexity": {
            "jobs_run": [history["job"], "streaming lane " + live_lane]
            + ([live["nightly"]["job"] + " (nightly)"] if live["nightly"] else [])
            + done.get("jobs", []),
            "long_running_jobs": 1,
            "scheduled_jobs": 1 if live["nightly"] else 0,
            "tables": kept["tables"],
            "checkpoints": kept["checkpoint_dirs"],
            "functions": called.lines(),
        },
    }


def new_logic(
    spark: Any, settings: Settings, change: dict[str, Any], disk: DiskPeak, records: int
) -> tuple[Platform, dict[str, Any]]:
    """The logic change served by a platform built with it: timed, the disk sampled around it.

    Returns the new platform and the figures (what it ran, ``jobs`` among them).
    """
    disk.phase = "logic change"
    platform = build(changed(settings, change))
    disk.sample()
    seconds, done = timed(lambda: platform.serve_new_logic(spark))
    disk.sample()
    say(
        "new logic",
        message=f"new logic served in {seconds:.1f} s ({records / seconds:,.0f} records/s)",
    )
    return platform, {
        "change": change,
        "seconds": round(seconds, 1),
        "log_records": records,
        "events_per_s": round(records / seconds, 1),
        **done,
    }


def live_figures(live: dict[str, Any], excluded: set[int], warmup_s: float) -> dict[str, Any]:
    """The live phase's figures (:func:`run_live`) and the probes' freshness.

    ``excluded``: probes the contract let the lane leave out (late), not counted.
    """
    schedule, seen = live["schedule"], live["seen"]
    probes = schedule.probes
    return {
        "live": {
            "generator": schedule.as_dict() | {"probes": len(probes)},
            "valid": schedule.valid,
            "caught_up": live["caught_up"],
            "micro_batches": live["micro_batches"],
            "median_micro_batch_s": live["median_micro_batch_s"],
            "steadiness": live["steadiness"],
            "nightly": live["nightly"],
            "watch": seen.summary(),
        },
        "freshness": freshness(
            probes,
            seen.probe_first_seen,
            excluded,
            schedule.started_at + warmup_s,
            halves_at=schedule.started_at + schedule.seconds_target / 2,  # Lambda's nightly
        )
        | {"warm_up_discarded_s": warmup_s},
    }


def run_live(
    spark: Any, platform: Platform, plan: SteadyPlan, look: Look, poll_s: float, workdir: Path,
    unit: str = "events",
) -> dict[str, Any]:  # fmt: skip
    """The streaming job under a steady generator, watched over HTTP; Lambda's nightly halfway.

    The lane runs on a thread of this process, the design's read API beside it
    (:class:`compare.watch.Served`), and ``look`` is what the watcher asks it for.
    """
    batches: list[dict] = []
    errors: list[BaseException] = []

    def stream() -> None:
        try:
            platform.run_streaming(spark, until_caught_up=False, on_progress=batches.append)
        except BaseException as error:  # reported after the live phase
            errors.append(error)

    lane = threading.Thread(target=stream, name="lk-compare-stream", daemon=True)
    lane.start()
    nightly: dict[str, Any] | None = None
    with (
        Served(spark, platform) as served,
        Watcher(served.base_url, look, poll_s) as watcher,
    ):
        with SteadyGenerator(plan, workdir) as generator:
            say("live", message=f"generator sends {plan.rate:g} {unit}/s for {plan.seconds:g} s")
            time.sleep(plan.seconds / 2)
            started = time.perf_counter()
            nightly = platform.scheduled_recompute(spark)
            if nightly is not None:
                nightly["seconds"] = round(time.perf_counter() - started, 1)
                say(
                    "nightly",
                    message=f"nightly batch run published in {nightly['seconds']} s "
                    "while the speed layer served",
                    **nightly,
                )
            schedule = generator.wait()
        say(
            "live",
            message=f"generator done: {schedule.sent:,} records, "
            f"schedule lag {schedule.schedule_lag}",
        )
        caught_up = wait_caught_up(spark, platform, timeout=300)
        served.wait_current()
        watcher.look_once_more()
    for query in spark.streams.active:
        query.stop()
    lane.join(timeout=120)
    if errors:
        raise RuntimeError(f"the streaming job failed: {errors[0]}") from errors[0]
    in_order = [(b.get("batch_duration_ms") or 0) / 1000 for b in batches]
    durations = sorted(in_order)
    return {
        "schedule": schedule,
        "seen": watcher.seen,
        "nightly": nightly,
        "caught_up": caught_up,
        "micro_batches": len(batches),
        "median_micro_batch_s": durations[len(durations) // 2] if durations else None,
        "steadiness": steadiness(
            in_order, plan.seconds, state_horizons(platform.settings, platform.registry)
        ),
    }


def live_phase(
    spark: Any, platform: Platform, opts: CompareOptions, seed: int, workdir: Path
) -> dict[str, Any]:
    """The shop's live phase: the seeded generator, probes and live revenue windows watched."""
    plan = live_plan(platform.settings, opts, seed)
    windows_from = datetime.now(UTC).replace(tzinfo=None, second=0, microsecond=0)
    look = shop_look(PROBE_BASE, windows_from)
    return run_live(spark, platform, plan, look, opts.poll_s, workdir) | {
        "windows_from": windows_from
    }


def live_plan(settings: Settings, opts: CompareOptions, seed: int) -> SteadyPlan:
    """The shop's live records: the seeded generator at the run's rate, with probes."""
    return SteadyPlan(
        settings.kafka.bootstrap_servers,
        settings.kafka.events_topic,
        rate=opts.rate,
        seconds=opts.live_seconds,
        source_args={
            "seed": seed,
            "users": opts.users,
            "products": opts.products,
            "probe_every": opts.probe_every,
            "late_fraction": opts.late_fraction,
            "max_lateness_s": opts.live_max_lateness_s,
        },
        max_schedule_lag_s=opts.max_schedule_lag_s,
    )


def probe_positions(log_events: list[oracle.RawRecord]) -> dict[int, tuple[int, int]]:
    """Probe user -> (partition, offset) of its event in the log."""
    out: dict[int, tuple[int, int]] = {}
    for record in log_events:
        if record.key and record.key.isdigit() and int(record.key) >= PROBE_BASE:
            out.setdefault(int(record.key), (record.partition, record.offset))
    return out


def late_fates(
    unique: list[oracle.Event],
    values: tuple[str, ...],
    late_for: Callable[[timedelta], set[str]],
    absorbed_below: dict[int, int] | None,
) -> list[dict[str, Any]]:
    """For each allowed lateness: events the live lane leaves out, and what becomes of them.

    ``late_for(lateness)``: the ids the lane leaves out at that lateness; those below
    ``absorbed_below`` (a later batch run's cutoff) are absorbed, the rest lost for good.
    """
    out = []
    cut = absorbed_below or {}
    for text in values:
        late = late_for(parse_duration(text))
        events = [e for e in unique if e.event_id in late]
        absorbed = sum(1 for e in events if e.offset < cut.get(e.partition, 0))
        out.append(
            {
                "allowed_lateness": text,
                "late_in_streaming": len(events),
                "absorbed_later": absorbed,
                "excluded_for_good": len(events) - absorbed,
            }
        )
    return out


def late_data(
    log: OracleLog,
    batches: list[oracle.MicroBatch],
    values: tuple[str, ...],
    absorbed_below: dict[int, int] | None,
) -> list[dict[str, Any]]:
    """:func:`late_fates` of the shop's log, late as ``events_by_type`` (every event) counts."""

    def late_for(lateness: timedelta) -> set[str]:
        return late_by_contract(log, batches, lambda _v: lateness)["events_by_type"]

    return late_fates(log.unique, values, late_for, absorbed_below)


#: What runs the scenario and checks it, not the design: left out of the code it ran.
HARNESS = ("compare/", "measure/", "oracle/", "tests/")


def run(job: dict[str, Any]) -> dict[str, Any]:
    """The whole scenario of one design; the figures as a dict."""
    with CalledFunctions(REPO, HARNESS) as called:
        return _scenario(job, called)


def _scenario(job: dict[str, Any], called: CalledFunctions) -> dict[str, Any]:
    """The scenario itself; ``called`` records the platform code it runs."""
    from lake.spark import build_session
    from oracle import consume_all

    opts = CompareOptions.model_validate(job["options"])
    settings = load_settings(**job["settings"])
    design, seed, workdir = settings.mode, job["seed"], Path(job["workdir"])
    spark = build_session(settings, app_name=f"lk-compare-{design}")
    platform = build(settings)
    root = local_dir(Tables.of(settings).root)
    result: dict[str, Any] = {"design": design, "seed": seed, "phases": {}}
    with DiskPeak(root) as disk:
        seconds, history = timed(lambda: platform.build_history(spark))
        result["phases"]["history"] = {"seconds": round(seconds, 1), **history}
        say("history", message=f"{history['job']} over the history in {seconds:.1f} s")
        disk.phase = "live"
        live_lane = platform.streaming_lane_name(spark)
        live = live_phase(spark, platform, opts, seed, workdir)
        events = consume_all(settings, settings.kafka.events_topic)
        log = OracleLog.of(events, consume_all(settings, settings.kafka.catalog_topic))
        live_check, late, batches, cutoff = check(spark, platform, log)
        say(
            "correctness",
            message=f"end of live phase: {live_check['unexplained']} unexplained differences",
            unexplained=live_check["unexplained"],
        )
        schedule, seen = live["schedule"], live["seen"]
        probes = {int(p["id"]) for p in schedule.probes}
        cut = cutoff or {}
        by_event = {e.event_id: e for e in log.unique}
        excluded = {
            int(e.user_id)
            for eid in late["cart_state"]
            if (e := by_event.get(eid)) and e.offset >= cut.get(e.partition, 0)
        }
        quantities = {
            r.user_id: r.quantity
            for r in platform.read(spark, "cart_state").where(f"user_id >= {PROBE_BASE}").collect()
        }
        positions = probe_positions(events)
        nightly_cut = (live["nightly"] or {}).get("cutoff") or {}
        straddle = [
            b
            for b in batches
            if any(b.start.get(p, 0) < o <= b.end.get(p, 0) for p, o in nightly_cut.items())
        ]
        straddling = {u for u, (p, o) in positions.items() if any(b.holds(p, o) for b in straddle)}
        full = {
            k: v
            for k, v in keyed(
                full_views(log, settings.views)[REVENUE], ("window_start", "category")
            ).items()
        }
        final = {
            (datetime.fromisoformat(k[0]), k[1]): (dict(v)["orders"], dict(v)["revenue"])
            for k, v in full.items()
            if datetime.fromisoformat(k[0]) >= live["windows_from"]
        }
        over_time = windows_over_time(seen.windows, final)
        size = settings.views.tumbling_window.total_seconds()
        result |= live_figures(live, excluded, opts.warmup_s)
        result["correctness_over_time"] = {
            **window_delays(over_time["windows"], size),
            "per_window": over_time["windows"],
        }
        result["handoff"] = handoff(quantities, probes, excluded, straddling)
        told = read_records(settings)
        bursts = settings.views.burst_window
        result["alerts"] = {"live": alert_figures(told, log.unique, bursts, schedule.started_at)}
        result["correctness"] = {"end_of_live": live_check}
        fresh = result["freshness"]["processing_time_s"] or {}
        say(
            "freshness",
            message=f"ack -> visible through the serving view: p50 {fresh.get('p50')} s, "
            f"p99 {fresh.get('p99')} s over {fresh.get('n', 0)} probes",
            **{k: result["freshness"][k] for k in ("processing_time_s", "event_time_s")},
        )

        offsets = len(events)
        platform2, result["new_logic"] = new_logic(spark, settings, opts.change, disk, offsets)
        after, _, batches2, cutoff2 = check(spark, platform2, log)
        result["correctness"]["after_change"] = after
        seen_until = max((r.offset for r in told), default=-1)
        changed_told = [r for r in read_records(settings) if r.offset > seen_until]
        result["alerts"]["after_change"] = alert_figures(
            changed_told, log.unique, platform2.settings.views.burst_window, float("inf")
        )  # no delay: what the change publishes is a recompute, not a fresh burst
        say(
            "correctness",
            message=f"after the change: {after['unexplained']} unexplained differences",
            unexplained=after["unexplained"],
        )
        final_cut = cutoff2 if cutoff2 is not None else None
        result["late_data"] = {
            "live_lane": late_data(log, batches, opts.lateness_values, final_cut),
            "after_change_lane": late_data(log, batches2, opts.lateness_values, final_cut),
            "note": "late_in_streaming: left out by the streaming lane at that lateness (the "
            "contract, from its micro-batches); absorbed_later: below the batch cutoff served "
            "after the change",
        }
        disk.phase = "end"
        kept = disk.sample()
    result |= operations(
        settings, disk, kept, [history, live, result["new_logic"]], live_lane, called
    )
    result["log"] = {
        "events_records": offsets,
        "unique_events": len(log.unique),
        "quarantined": log.quarantined,
    }
    if opts.sustainable:
        from compare.sustain import search
        from measure.sustain import TrialWindow

        window = TrialWindow(opts.sustainable_warm_up_s, opts.sustainable_seconds)
        say(
            "sustainable",
            message=f"searching the sustainable rate from {opts.sustainable_start:,} events/s, "
            f"{opts.sustainable_trials} trials of {window.seconds:g} s",
        )
        found = search(
            spark, platform2, opts.sustainable_start, opts.sustainable_trials, window, workdir
        )
        result["sustainable_rate"] = found
        say(
            "sustainable",
            message=f"highest sustainable rate: {found['highest_sustainable_rate']} events/s "
            f"(lowest that failed: {found['lowest_failed_rate']})",
        )
    spark.stop()
    return result


def scaling_run(job: dict[str, Any]) -> dict[str, Any]:
    """Serve the history, then time serving new logic over it (``lk compare --scaling``)."""
    from lake.spark import build_session

    opts = CompareOptions.model_validate(job["options"])
    settings = load_settings(**job["settings"])
    spark = build_session(settings, app_name=f"lk-compare-scaling-{settings.mode}")
    seconds, _ = timed(lambda: build(settings).build_history(spark))
    say("scaling", message=f"history served in {seconds:.1f} s")
    new_logic, _ = timed(lambda: build(changed(settings, opts.change)).serve_new_logic(spark))
    say("scaling", message=f"new logic served in {new_logic:.1f} s")
    spark.stop()
    return {
        "design": settings.mode,
        "events": job["events"],
        "history_seconds": round(seconds, 1),
        "seconds": round(new_logic, 1),
    }


def main(argv: list[str]) -> int:
    """``python -m compare.design JOB.json``: run, write the job's ``out`` file."""
    job = json.loads(Path(argv[0]).read_text())
    result = scaling_run(job) if job.get("kind") == "scaling" else run(job)
    Path(job["out"]).write_text(json.dumps(result, default=str))
    say("done", message=f"{result['design']} done")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
