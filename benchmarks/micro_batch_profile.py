"""Where a micro-batch's time goes: wall time, generated code and JIT, micro-batch by micro-batch.

One run, one broker: the benchmark workload is loaded into a fresh topic, then the
Lambda speed layer catches up on it in this process (``run_speed(until_caught_up=True)``,
what ``lk speed --until-caught-up`` calls) in micro-batches of ``--offsets`` offsets.
After every micro-batch the JVM is asked for:

* Janino compilations of Spark-generated code (Spark's ``CodegenMetrics``): a plan whose
  generated Java source was compiled before is served from Spark's code cache;
* classes loaded so far (class-loading MXBean);
* HotSpot JIT compilation time so far (compilation MXBean).

Reported per micro-batch (differences between consecutive readings) and as medians over
the micro-batches after the first two (warm-up).

With ``--per-write``, each Delta commit of the micro-batch is timed as well (the
micro-batch's one commit, and the compaction/pruning commit every few micro-batches).
With ``--per-piece``, each piece of the one commit (a view's contribution, the late,
quarantined and retained events, the progress row) is first computed alone into Spark's
``noop`` sink and timed, then the commit runs as usual: what each piece costs to
compute, without the Delta write (the micro-batch's own time then includes both).

With ``--contender floor`` or ``floor-views``, the same catch-up runs through the floor
(:mod:`compare.floor`: the bare read, decode and idempotent append, and that with every
view's contribution in the same commit) instead of the speed layer: what the engine's
own warm-up costs a first micro-batch, whatever the design. The JVM counters of a floor
micro-batch are read after each commit, so they include the gap before it.

Run: ``python -m benchmarks.micro_batch_profile [--events 100000] [--offsets 10000]
[--per-write | --per-piece] [--contender lk|floor|floor-views]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from benchmarks.recompute_vs_replay import capped, isolated, load_topic, records_file, spec_for
from compare.floor import run_to, start_floor
from config.settings import Settings
from designs.lambda_arch.epochs import run_speed
from designs.platform import build
from event_log.topics import end_offsets, ensure_topics
from lake.jvm import jvm
from lake.spark import build_session, codegen_compilations
from measure.machine import broker, machine
from speed_layer import micro_batch
from speed_layer.lane import Lane
from views import default_registry

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results" / "micro_batch_profile.json"
WARM_UP = 2


def jvm_counters(spark: SparkSession) -> dict[str, int]:
    """Janino compilations, loaded classes and JIT milliseconds of the driver JVM so far."""
    management = jvm(spark).java.lang.management.ManagementFactory
    return {
        "janino_compilations": codegen_compilations(spark),
        "classes_loaded": management.getClassLoadingMXBean().getTotalLoadedClassCount(),
        "jit_ms": management.getCompilationMXBean().getTotalCompilationTime(),
    }


def piece_name(piece: DataFrame) -> str:
    """A log piece's name: its payload column (the view's name, or the part's)."""
    return piece.columns[1]


def computed_alone(pieces: list[DataFrame]) -> dict[str, float]:
    """Seconds to compute each piece alone, written to Spark's ``noop`` sink."""
    seconds: dict[str, float] = {}
    for piece in pieces:
        started = time.perf_counter()
        piece.write.format("noop").mode("overwrite").save()
        name = piece_name(piece)
        seconds[name] = round(seconds.get(name, 0) + time.perf_counter() - started, 2)
    return seconds


def profiled(
    spark: SparkSession, rows: list[dict[str, Any]], *, per_write: bool, per_piece: bool = False
) -> None:
    """Record wall time and counter increments of every micro-batch into ``rows``.

    With ``per_write``, the time of each Delta commit to the lane's log is recorded too:
    ``commit`` (the micro-batch's one commit, which runs the views' jobs) and
    ``maintain`` (the every-few-micro-batches compaction/pruning commit); ``before``
    is the rest (reading progress and the catalog, the counting pass).
    """
    original = micro_batch.MicroBatchProcessor.__call__
    writes: dict[str, float] = {}
    alone: dict[str, float] = {}

    def timed(name: str, write: Callable[..., None]) -> Callable[..., None]:
        def run(*args: Any, **kwargs: Any) -> None:
            started = time.perf_counter()
            write(*args, **kwargs)
            writes[name] = round(writes.get(name, 0) + time.perf_counter() - started, 2)

        return run

    def call(self: micro_batch.MicroBatchProcessor, batch: DataFrame, batch_id: int) -> None:
        writes.clear()
        alone.clear()
        before, started = jvm_counters(spark), time.perf_counter()
        original(self, batch, batch_id)
        after = jvm_counters(spark)
        seconds = round(time.perf_counter() - started, 2)
        if per_write:
            writes["before"] = round(seconds - sum(writes.values()), 2)
        rows.append(
            {
                "batch_id": batch_id,
                "seconds": seconds,
                **{key: after[key] - before[key] for key in after},
                "phases": self.timings.get(batch_id, {}),
                **({"writes": dict(writes)} if per_write else {}),
                **({"pieces": dict(alone)} if per_piece else {}),
            }
        )
        print(rows[-1], flush=True)

    micro_batch.MicroBatchProcessor.__call__ = call  # type: ignore[method-assign]  # profiling wraps it
    if per_write:
        micro_batch.lane_log.commit = timed("commit", micro_batch.lane_log.commit)
        micro_batch.lane_log.replace = timed("maintain", micro_batch.lane_log.replace)
    if per_piece:
        commit = micro_batch.lane_log.commit

        def commit_after_pieces(
            spark: SparkSession,
            lane: Lane,
            pieces: list[DataFrame],
            *,
            indexed: tuple[str, ...] = (),
            keys: Mapping[str, Iterable[str]] | None = None,
            created_with: Mapping[str, str] | None = None,
            note: str | None = None,
        ) -> None:
            alone.update(computed_alone(pieces))
            commit(
                spark,
                lane,
                pieces,
                indexed=indexed,
                keys=keys,
                created_with=created_with,
                note=note,
            )

        micro_batch.lane_log.commit = commit_after_pieces


def profile_floor(
    spark: SparkSession, settings: Settings, rows: list[dict[str, Any]], *, views: bool
) -> None:
    """Catch the floor (with the views, if ``views``) up on the topic, one row per micro-batch."""
    last = jvm_counters(spark)

    def record(batch: DataFrame, batch_id: int, committed_at: float) -> None:
        nonlocal last
        now = jvm_counters(spark)
        rows.append(
            {
                "batch_id": batch_id,
                "seconds": round(durations[-1][1], 2),
                **{key: now[key] - last[key] for key in now},
            }
        )
        last = now
        print(rows[-1], flush=True)

    target = end_offsets(settings, settings.kafka.events_topic)
    query, durations = start_floor(spark, settings, record, default_registry() if views else None)
    run_to(query, target)


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Medians over the micro-batches after the warm-up ones (per write, if timed)."""
    steady = rows[WARM_UP:] or rows
    if not steady:
        return {}
    keys = ("seconds", "janino_compilations", "classes_loaded", "jit_ms")
    medians: dict[str, Any] = {key: statistics.median(r[key] for r in steady) for key in keys}
    for kind in ("writes", "pieces"):
        labels = sorted({label for r in steady for label in r.get(kind, {})})
        if labels:
            medians[kind] = {
                label: statistics.median(r[kind][label] for r in steady if label in r[kind])
                for label in labels
            }
    return medians


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--offsets", type=int, default=10_000, help="offsets per micro-batch")
    parser.add_argument("--per-write", action="store_true", help="time each write alone")
    parser.add_argument(
        "--per-piece", action="store_true", help="compute each piece of the commit alone first"
    )
    parser.add_argument(
        "--contender",
        choices=("lk", "floor", "floor-views"),
        default="lk",
        help="the speed layer, or the floor (with the views) over the same catch-up",
    )
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args()
    with (
        tempfile.TemporaryDirectory(prefix="lk-profile-") as tmp,
        broker(None, Path(tmp) / "kafka") as base,
    ):
        settings = capped(isolated(base, "profile", Path(tmp)), args.offsets)
        spark = build_session(settings, app_name="lk-micro-batch-profile")
        info = machine(settings)
        ensure_topics(settings)
        load_topic(spark, settings, records_file(spec_for(args.events)))
        rows: list[dict[str, Any]] = []
        started = time.perf_counter()
        if args.contender == "lk":
            profiled(spark, rows, per_write=args.per_write, per_piece=args.per_piece)
            run_speed(spark, settings, build(settings).registry, until_caught_up=True)
        else:
            profile_floor(spark, settings, rows, views=args.contender == "floor-views")
        report = {
            "benchmark": "micro_batch_profile",
            "contender": args.contender,
            "machine": info,
            "events": args.events,
            "max_offsets_per_trigger": args.offsets,
            "writes": "one by one, each timed" if args.per_write else "at once",
            "pieces": "each computed alone first" if args.per_piece else "not timed",
            "seconds": round(time.perf_counter() - started, 1),
            "codegen_cache_max_entries": spark.conf.get("spark.sql.codegen.cache.maxEntries"),
            "spark_conf": settings.spark.conf,
            "driver_java_options": settings.spark.driver_java_options,
            "median_after_warm_up": summary(rows),
            "micro_batches": rows,
        }
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(json.dumps(report, indent=2))
        print(json.dumps(report["median_after_warm_up"]), flush=True)
        spark.stop()


if __name__ == "__main__":
    main()
