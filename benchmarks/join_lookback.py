"""The join's look-back: what a live micro-batch's ``conversions`` costs as the look-back fills.

``conversions`` is the one view that joins a micro-batch's events with earlier ones (a
purchase converts if the same user viewed the same product within the hour before it).
A live lane keeps the events of that hour in its log (the ``retained`` part) and, each
micro-batch, reads those within the look-back and keeps the ones ``partners`` says can
still meet the micro-batch's events (:func:`speed_layer.view_input.view_input`). The
30-minute freshness run at 2,000 events/s showed the records a micro-batch reads growing
with that hour; this measures it apart, with nothing else running.

A lane log is built as a live lane at ``--rate`` events/s writes it: one commit of
retained events per ``--batch-seconds`` of event time, with the shop's mix of events
(page views, cart changes, purchases) over 200 users and 100 products, as the freshness
benchmark's generator sends them. When it holds each of ``--minutes`` of look-back, one
micro-batch's worth of newer events (``rate x batch-seconds``) is joined with it, three
ways, each the median of ``--repeat`` runs after one to warm up:

* ``through_log``: as the lane does, the retained events read from the log at its version;
* ``held_in_memory``: the same code over the retained events cached in memory (the
  candidate the issue names: a copy held between micro-batches), with what it holds;
* ``own_only``: the view over the micro-batch alone, no earlier events: what a design
  that did not join across micro-batches (the views floor) pays for this view;
* ``through_gathered_log``: over a log whose retained events of each closed ten
  minutes were gathered into one file (:func:`speed_layer.maintenance.gather`), a
  second log written alongside with the same commits;
* ``through_kept_context``: as the lane does now, over what the join keeps of them
  (``View.context_kept``: two page views per user, product and hour, the purchases a
  page view to come can still meet), a third log written alongside: each commit's
  kept rows, and every ``stream.compact_every`` commits a compaction of them
  (:func:`speed_layer.maintenance.contexts`). ``kept_rows`` is what it reads,
  ``kept_write_seconds`` the median cost of a commit of retained events, and of one
  of what the join keeps of them, and a compaction's.

Run: ``python -m benchmarks.join_lookback [--rate 2000] [--minutes 10 20 40 75]``.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from config.settings import Settings, load_settings
from event_log.decode import event_columns, event_schema
from lake.spark import build_session
from measure.laps import median_run
from measure.machine import machine
from measure.stats import percentile
from speed_layer import lane_log
from speed_layer.epoch import Epoch
from speed_layer.jobs import release
from speed_layer.join_context import ContextPart, kept_for_join, rule_of
from speed_layer.lane import Lane
from speed_layer.maintenance import REGION_STEP, compact, contexts, gather
from speed_layer.view_input import CONTEXT_STEP, view_input
from views import default_registry
from views.base import View, ViewContext
from views.registry import ViewRegistry
from views.windows import floor_to

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results" / "join_lookback.json"
USERS, PRODUCTS = 200, 100
START = datetime(2026, 1, 1)
#: the part the kept rows go to, as a lane seeded in its first micro-batch names it
KEPT_PART = lane_log.context_part("conversions", seeded_by=0)


def shop_events(
    spark: SparkSession, settings: Settings, count: int, start: datetime, seconds: float, seed: int
) -> DataFrame:
    """``count`` decoded events spread evenly over ``seconds`` from ``start``.

    The mix of the freshness benchmark's generator (``measure.live``): 60 % page views,
    25 % cart additions, 15 % purchases, uniform over users and products.
    """
    registry = default_registry()
    types = {f.name: f.dataType for f in event_schema(registry.contract).fields}
    roll = F.rand(seed)
    values = {
        "event_id": F.concat(F.lit(f"e{seed}-"), F.col("id").cast("string")),
        "event_type": F.when(roll < 0.60, "page_view")
        .when(roll < 0.85, "add_to_cart")
        .otherwise("purchase"),
        "user_id": 1 + (F.rand(seed + 1) * USERS).cast("long"),
        "product_id": 1 + (F.rand(seed + 2) * PRODUCTS).cast("long"),
        "quantity": F.when(roll >= 0.60, F.lit(1)),
        "price": F.when(roll >= 0.60, F.lit(10.0)),
        "event_time": F.lit(start) + F.make_interval(secs=F.col("id") * (seconds / count)),
        "partition": (F.col("id") % 4).cast("int"),
        "offset": F.col("id") + seed * 10_000_000,
    }
    values["sent_time"] = values["kafka_timestamp"] = values["event_time"]
    columns = event_columns(registry.contract)
    return spark.range(count).select(
        *[values[c].cast(types[c]).alias(c) for c in columns],
        F.array().cast("array<string>").alias("late_for"),
        F.lit(seed).cast("long").alias("batch_id"),
    )


def cached_megabytes(spark: SparkSession) -> float:
    """What Spark's block manager holds of cached frames now, in MB (memory and disk)."""
    infos = spark.sparkContext._jsc.sc().getRDDStorageInfo()
    return round(sum(i.memSize() + i.diskSize() for i in infos) / 1e6, 1)


def measure(
    spark: SparkSession,
    settings: Settings,
    view: View,
    lane: Lane,
    own: DataFrame,
    clock: datetime,
    repeat: int,
    gathered: Lane,
    kept_lane: Lane,
) -> dict[str, Any]:
    """The four ways of one micro-batch (the module docstring) over the logs as they are."""
    columns, time_field = event_columns(default_registry().contract), "event_time"
    watermark = clock - settings.views.lateness(view.name)
    ctx = ViewContext(settings.views)
    retained = lane_log.read(spark, lane, lane_log.RETAINED, lane_log.version(spark, lane))
    assert retained is not None

    def joined(earlier: DataFrame) -> Callable[[], int]:
        def run() -> int:
            held: list[DataFrame] = []
            try:
                context = view_input(
                    view, own, earlier, watermark, held, {}, columns=columns, time=time_field,
                    settings=settings.views,
                )  # fmt: skip
                return view.compute(context, ctx).count()
            finally:
                release(held)

        return run

    bound = floor_to(watermark - settings.views.conversion_lookback, CONTEXT_STEP)
    within = retained.where(F.col(time_field) >= F.lit(bound))
    assert view.partners is not None
    partners = view.partners(own, within, settings.views).count()
    through_log, rows = median_run(joined(retained), repeat, warm_up=True)
    before = cached_megabytes(spark)
    copy = retained.persist()
    held_rows = copy.count()
    held_mb = round(cached_megabytes(spark) - before, 1)
    held_in_memory, same = median_run(joined(copy), repeat, warm_up=True)
    copy.unpersist(blocking=True)
    own_only, _ = median_run(
        lambda: view.compute(own.select(*columns), ctx).count(), repeat, warm_up=True
    )
    assert same == rows, "the held copy gives the rows the log gives"
    fewer = lane_log.read(spark, gathered, lane_log.RETAINED, lane_log.version(spark, gathered))
    assert fewer is not None
    through_gathered_log, also = median_run(joined(fewer), repeat, warm_up=True)
    assert also == rows, "the gathered log gives the rows the log gives"
    kept = lane_log.read(spark, kept_lane, KEPT_PART, None, lane_log.CONTEXT)
    assert kept is not None
    through_kept_context, same_state = median_run(joined(kept), repeat, warm_up=True)
    assert same_state == rows, "what the join keeps gives the rows every event gives"
    return {
        "retained_rows": held_rows,
        "rows_within_look_back": within.count(),
        "partner_rows": partners,
        "kept_rows": kept.count(),
        "state_rows": rows,
        "seconds": {
            "through_log": round(through_log, 2),
            "held_in_memory": round(held_in_memory, 2),
            "own_only": round(own_only, 2),
            "through_gathered_log": round(through_gathered_log, 2),
            "through_kept_context": round(through_kept_context, 2),
        },
        "retained_files": {"log": files(spark, lane), "gathered_log": files(spark, gathered)},
        "held_in_memory_mb": held_mb,
    }


def files(spark: SparkSession, lane: Lane) -> int:
    """The files of the retained part in the log's current version."""
    log = spark.read.format("delta").load(lane.log)
    retained = log.where(F.col(lane_log.PART) == lane_log.RETAINED)
    return retained.select("_metadata.file_path").distinct().count()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=int, default=2_000, help="events per second")
    parser.add_argument("--batch-seconds", type=float, default=17.0, help="a micro-batch's span")
    parser.add_argument("--minutes", type=int, nargs="+", default=[10, 20, 40, 75])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args()
    settings = load_settings()
    spark = build_session(settings, app_name="lk-join-lookback")
    view = default_registry().get("conversions")
    per_batch = int(args.rate * args.batch_seconds)
    step = timedelta(seconds=args.batch_seconds)
    indexed = (f"{lane_log.RETAINED}.event_time",)
    points = []
    with tempfile.TemporaryDirectory(prefix="lk-join-lookback-") as tmp:
        lane, gathered = Lane("lookback", f"{tmp}/log"), Lane("gathered", f"{tmp}/gathered")
        kept_lane, only = Lane("kept", f"{tmp}/kept"), ViewRegistry([view])
        epoch = Epoch(id="kappa", cutoff={}, base=lambda view: None, keeps_history=False)
        writes: dict[str, list[float]] = {"retained": [], "kept": [], "compaction": []}
        written, clock, since = 0, START, START
        for minutes in sorted(args.minutes):
            while clock < START + timedelta(minutes=minutes):
                rows = shop_events(spark, settings, per_batch, clock, step.total_seconds(), written)
                for log in (lane, gathered):
                    started = time.perf_counter()
                    lane_log.commit(
                        spark, log, [lane_log.rows(lane_log.RETAINED, rows)], indexed=indexed
                    )
                    writes["retained"].append(time.perf_counter() - started)
                started = time.perf_counter()
                kept_rows = kept_for_join(view, rows, None, settings.views)
                piece = lane_log.context_rows(KEPT_PART, kept_rows)
                lane_log.commit(spark, kept_lane, [piece], indexed=indexed)
                writes["kept"].append(time.perf_counter() - started)
                written, clock = written + 1, clock + step
                if written % settings.stream.compact_every == 0:
                    started = time.perf_counter()
                    claim = {view.name: ContextPart(KEPT_PART, rule_of(settings.views))}
                    joins = contexts(spark, settings, kept_lane, only, clock, claim)
                    compact(spark, kept_lane, only, epoch, None, joins)
                    writes["compaction"].append(time.perf_counter() - started)
            closed = floor_to(clock - settings.views.lateness(view.name), REGION_STEP)
            started = time.perf_counter()
            since = gather(spark, gathered, indexed[0], since, closed)
            gather_s = round(time.perf_counter() - started, 2)
            own = shop_events(spark, settings, per_batch, clock, step.total_seconds(), 10**6)
            own = own.persist()
            point = {"look_back_minutes": minutes, "commits": written, "gather_seconds": gather_s}
            point |= measure(
                spark, settings, view, lane, own, clock, args.repeat, gathered, kept_lane
            )
            point["kept_write_seconds"] = {
                kind: round(percentile(times, 0.5), 3) for kind, times in writes.items() if times
            }
            own.unpersist()
            print(json.dumps(point), flush=True)
            points.append(point)
    report = {
        "benchmark": "join_lookback",
        "machine": machine(settings),
        "rate": args.rate,
        "micro_batch_events": per_batch,
        "users": USERS,
        "products": PRODUCTS,
        "points": points,
    }
    spark.stop()
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
