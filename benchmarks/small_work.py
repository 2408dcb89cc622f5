"""Small work: a batch run, a Kappa reprocess and a first micro-batch on the demo's workload.

Issue 32 item 4 asks that little work cost little: on a few thousand events, a batch
run and a Kappa reprocess within 15 s, a lane's first micro-batch within 10 s. Each
operation runs in a fresh process of its own, as the command a user types does
(``lk batch run``, ``lk kappa reprocess``, ``lk speed --until-caught-up``), twice in
that process: the first run is what the command costs (a fresh JVM plans and compiles
everything), the second what the same work costs once the JVM has done so. Each is
reported per step (the operation's own ``steps``, or the lane's phases), with the Spark
jobs each ran, the session's start, and where its wall time went (``time``, from the
driver's record of its SQL executions: Delta's own transaction-log work, the other
Spark work, and the time no Spark work ran at all).

The second batch run recomputes with ``force``; the second reprocess builds the next
version, so its switch diffs it against the first; the second first micro-batch is a
new lane's (its own storage root) in the same process.

Beside them, the same way, the engine's floor for the same work
(:mod:`compare.floor`, what any design must do): a Spark job that reads the topic,
decodes, de-duplicates, computes every view and writes them in one Delta commit (the
floor of a batch run and of a replay), and the first micro-batch of the streaming views
floor (read, decode, de-duplicate, every view, one commit). A target below the floor's
fresh-process figure cannot be met by any design on this machine that day.

Run: ``python -m benchmarks.small_work [--events 2000] [--output F] [--only speed ...]``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from batch_layer.job import run_batch
from benchmarks.recompute_vs_replay import (
    floor_views_from_log,
    isolated,
    load_topic,
    records_file,
    spec_for,
)
from compare.floor import start_floor
from config.settings import Settings
from designs.kappa.reprocess import reprocess
from designs.lambda_arch.epochs import run_speed
from designs.platform import build
from event_log.topics import end_offsets, ensure_topics
from lake.spark import build_session
from lake.tables import Tables
from measure.machine import broker, machine
from speed_layer.lane import lane_root
from speed_layer.metrics import read_metrics

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results" / "small_work.json"
OPERATIONS = ("batch", "kappa", "speed")
#: the engine's floor for the same work (module docstring), measured the same way
FLOORS = ("floor_job", "floor_micro_batch")
#: issue 32 item 4's targets, seconds
TARGETS = {"batch": 15.0, "kappa": 15.0, "speed": 10.0}
#: how long the streaming floor may take to read its first events
FLOOR_WAIT_S = 600
#: the operations each floor is the floor of
FLOOR_OF = {"floor_job": ("batch", "kappa"), "floor_micro_batch": ("speed",)}


#: SQL executions the driver keeps for the breakdown (the platform keeps 50)
KEPT_EXECUTIONS = 5_000
#: executions of Delta's own transaction log work, by their description
DELTA_LOG_WORK = ("Delta:", "$anonfun$recordDeltaOperation", "withNewExecutionId at DeltaTable")

Interval = tuple[float, float]


def spark_jobs(spark: SparkSession) -> int:
    """Spark jobs started in this JVM so far (the scheduler's count)."""
    jvm_context = spark.sparkContext._jsc.sc()
    return int(jvm_context.dagScheduler().numTotalJobs())


def executions(spark: SparkSession) -> dict[int, tuple[str, Interval]]:
    """The driver's finished SQL executions: id -> (description, (start, end) epoch s)."""
    listed = spark._jsparkSession.sharedState().statusStore().executionsList()
    found = {}
    for i in range(listed.size()):
        execution = listed.apply(i)
        if execution.completionTime().isDefined():
            start = execution.submissionTime() / 1000
            end = execution.completionTime().get().getTime() / 1000
            found[execution.executionId()] = (execution.description(), (start, end))
    return found


def covered(intervals: list[Interval], within: Interval) -> float:
    """Seconds of ``within`` during which at least one of ``intervals`` ran."""
    total, reached = 0.0, within[0]
    for start, end in sorted(intervals):
        start, end = max(start, reached), min(end, within[1])
        if end > start:
            total += end - start
            reached = end
    return total


def breakdown(ran: list[tuple[str, Interval]], within: Interval) -> dict[str, Any]:
    """Where a run's wall time went: Delta's log work, other Spark work, no Spark at all.

    Executions overlap (views are written side by side), so each share is the time
    during which at least one execution of its kind ran; ``spark_s`` is the time any
    ran, and ``driver_only_s`` the rest (Python, Great Expectations' own code, planning).
    """
    delta = [span for text, span in ran if text.startswith(DELTA_LOG_WORK)]
    spark = covered([span for _, span in ran], within)
    return {
        "sql_executions": len(ran),
        "delta_log_executions": len(delta),
        "spark_s": round(spark, 1),
        "delta_log_s": round(covered(delta, within), 1),
        "driver_only_s": round(within[1] - within[0] - spark, 1),
    }


def measured(spark: SparkSession, run: Callable[[], dict[str, float]]) -> dict[str, Any]:
    """Seconds, steps, Spark jobs and the time's breakdown of one run of an operation."""
    jobs, before = spark_jobs(spark), set(executions(spark))
    started, wall = time.perf_counter(), time.time()
    steps = run()
    within = (wall, time.time())
    ran = [found for key, found in executions(spark).items() if key not in before]
    return {
        "seconds": round(time.perf_counter() - started, 1),
        "steps": steps,
        "spark_jobs": spark_jobs(spark) - jobs,
        "time": breakdown(ran, within),
    }


def first_micro_batch(spark: SparkSession, settings: Settings) -> dict[str, float]:
    """Catch a new Lambda speed lane up on the log; its first micro-batch's phases (s)."""
    run_speed(spark, settings, build(settings).registry, until_caught_up=True)
    lane = lane_root(Tables.of(settings), "lambda-speed")
    phases = (read_metrics(spark, lane) or {}).get("recent_phase_ms") or [{}]
    first = phases[0]
    inside = ("prepare", "count", "commit", "maintain")
    return {
        "micro_batch": round(first.get("triggerExecution", 0) / 1000, 1),
        **{name: round(first[name] / 1000, 1) for name in inside if name in first},
    }


def floor_micro_batch(spark: SparkSession, settings: Settings) -> dict[str, float]:
    """The streaming views floor's first micro-batch over the log (its phases, s)."""
    registry = build(settings).registry
    query, _ = start_floor(spark, settings, views=registry, deduplicate=True)
    deadline = time.monotonic() + FLOOR_WAIT_S
    try:
        while not any(p["numInputRows"] for p in query.recentProgress):
            if query.exception() is not None:
                raise RuntimeError(f"the floor's query failed: {query.exception()}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"the floor's query read nothing in {FLOOR_WAIT_S} s")
            time.sleep(0.2)
    finally:
        query.stop()
    first = next(p for p in query.recentProgress if p["numInputRows"])
    return {"micro_batch": round(first["durationMs"]["triggerExecution"] / 1000, 1)}


def operation(
    spark: SparkSession, settings: Settings, name: str, attempt: int, root: Path
) -> dict[str, float]:
    """Run operation ``name`` once (``attempt`` 0 or 1); its steps in seconds."""
    if name == "floor_job":
        floor_views_from_log(spark, settings, str(root / f"floor-{attempt}"))
        return {}
    if name == "floor_micro_batch":
        storage = settings.storage.model_copy(update={"root": str(root / f"floor-{attempt}")})
        return floor_micro_batch(spark, settings.model_copy(update={"storage": storage}))
    if name == "batch":
        return run_batch(spark, settings, build(settings).registry, force=attempt > 0).steps
    if name == "kappa":
        kappa = settings.model_copy(update={"mode": "kappa"})
        return reprocess(spark, kappa, build(kappa).registry).steps
    storage = settings.storage.model_copy(update={"root": str(root / f"speed-{attempt}")})
    return first_micro_batch(spark, settings.model_copy(update={"storage": storage}))


def child(args: argparse.Namespace) -> None:
    """One operation, twice, in this fresh process; JSON to ``args.output``."""
    root = Path(args.root)
    with broker(args.bootstrap, root / "kafka") as base:
        started = time.perf_counter()
        settings = isolated(base, args.label, root)
        kept = {"spark.sql.ui.retainedExecutions": str(KEPT_EXECUTIONS)}
        conf = settings.spark.model_copy(update={"conf": {**settings.spark.conf, **kept}})
        settings = settings.model_copy(update={"spark": conf})
        spark = build_session(settings, app_name=f"lk-small-{args.child}")
        session_s = round(time.perf_counter() - started, 1)
        runs = []
        for attempt in (0, 1):
            runs.append(
                measured(spark, lambda: operation(spark, settings, args.child, attempt, root))  # noqa: B023  (called at once)
            )
            print(args.child, attempt, runs[-1], flush=True)
        Path(args.output).write_text(json.dumps({"session_start_s": session_s, "runs": runs}))
        spark.stop()


def verdict(operation: str, report: dict[str, Any]) -> dict[str, Any]:
    """The figure held against the target: the reprocess and batch run whole, the first
    micro-batch's own duration (not the lane's start around it)."""
    first, second = report["runs"]
    if operation in ("speed", "floor_micro_batch"):
        figure, warm = first["steps"]["micro_batch"], second["steps"]["micro_batch"]
    else:
        figure, warm = first["seconds"], second["seconds"]
    if operation in FLOORS:
        return {"seconds": figure, "warm_seconds": warm, "floor_of": list(FLOOR_OF[operation])}
    target = TARGETS[operation]
    return {"seconds": figure, "warm_seconds": warm, "target_s": target, "met": figure <= target}


def over_floor(results: dict[str, Any]) -> dict[str, dict[str, float]]:
    """Each operation's figure over its floor's, fresh and warm (in one run)."""
    ratios = {}
    for floor, operations in FLOOR_OF.items():
        for name in operations:
            measured = floor in results and name in results
            if measured and all(results[floor][key] > 0 for key in ("seconds", "warm_seconds")):
                ratios[name] = {
                    when: round(results[name][key] / results[floor][key], 2)
                    for when, key in (("fresh", "seconds"), ("warm", "warm_seconds"))
                }
    return ratios


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=2_000)
    parser.add_argument("--output", type=Path, default=RESULTS)
    parser.add_argument("--bootstrap", default=None)
    parser.add_argument(
        "--only",
        nargs="+",
        choices=OPERATIONS + FLOORS,
        default=list(OPERATIONS + FLOORS),
        help="measure these operations and floors only (default: all)",
    )
    parser.add_argument("--child", choices=OPERATIONS + FLOORS, help=argparse.SUPPRESS)
    parser.add_argument("--label", help=argparse.SUPPRESS)
    parser.add_argument("--root", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    with (
        tempfile.TemporaryDirectory(prefix="lk-small-") as tmp,
        broker(args.bootstrap, Path(tmp) / "kafka") as base,
    ):
        label = f"small_{int(time.time())}"
        settings = isolated(base, label, Path(tmp))
        info = machine(settings)
        ensure_topics(settings)
        spark = build_session(settings, app_name="lk-small-load")
        load_topic(spark, settings, records_file(spec_for(args.events)))
        spark.stop()
        offsets = sum(end_offsets(settings, settings.kafka.events_topic).values())
        results: dict[str, Any] = {}
        for operation in args.only:
            part = Path(tmp) / f"{operation}.json"
            command = [sys.executable, "-m", "benchmarks.small_work", "--child", operation]
            command += ["--bootstrap", settings.kafka.bootstrap_servers, "--label", label]
            command += ["--root", str(Path(tmp) / operation), "--output", str(part)]
            subprocess.run(command, check=True)
            report = json.loads(part.read_text())
            results[operation] = {**verdict(operation, report), **report}
        output = {
            "benchmark": "small_work",
            "machine": info,
            "events": args.events,
            "log_offsets": offsets,
            "results": results,
            "over_floor": over_floor(results),
        }
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(json.dumps(output, indent=2))
        for operation, r in results.items():
            against = f"target {r['target_s']} s" if "target_s" in r else "floor"
            print(
                f"{operation}: {r['seconds']} s (warm {r['warm_seconds']} s), "
                f"{against}, session start {r['session_start_s']} s",
                flush=True,
            )
        print(f"over the floor: {output['over_floor']}", flush=True)


if __name__ == "__main__":
    main()
