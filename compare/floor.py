"""The floor: the least any Spark + Delta speed layer pays on this machine.

One bare Structured Streaming query with the platform's Kafka source and decoder that
appends the valid decoded events to one Delta table, idempotently
(``txnAppId``/``txnVersion``, as exactly-once requires): no de-duplication, no views,
no late-event split, no serving. The freshness and sustainable-rate benchmarks hold the
speed layer against it.

With ``views``, the same commit also carries every view's contribution (``view.compute``),
one file per view; with ``deduplicate``, re-sends are dropped first as the contract
requires. A view that joins with earlier events (``conversions``) meets its partners
from earlier micro-batches, held in the session (:mod:`compare.floor_context`), so the
views it computes are right; ``join_context=False`` computes every view over the
micro-batch alone, a lower bound of something cheaper than the contract. Together: the
least any design that serves these views pays on this engine. It still leaves out what
a design needs beyond that (late events, merging with the state, keeping the context
through a crash, serving), so it is a lower bound, not a design.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery

from compare.floor_context import HeldContext
from config.settings import Settings
from event_log.catalog import read_catalog, read_catalog_versions
from event_log.decode import decode_events, event_columns
from event_log.kafka_source import read_stream
from event_log.topics import end_offsets
from lake.kept import kept, released
from lake.offsets import reaches
from lake.source import PART
from speed_layer import lane_log
from speed_layer.spark_progress import source_offsets
from views.base import ViewContext
from views.registry import ViewRegistry

OnCommit = Callable[[DataFrame, int, float], None]


def _with_views(
    batch: DataFrame,
    registry: ViewRegistry,
    ctx: ViewContext,
    *,
    keep_events: bool = True,
    context: HeldContext | None = None,
    held: list[DataFrame] | None = None,
) -> DataFrame:
    """The micro-batch's events and each view's contribution over them, as one frame.

    The events only with ``keep_events``. A joining view meets the partners ``context``
    holds (cached into ``held``). Laid out as a lane's log is
    (:mod:`speed_layer.lane_log`): a ``part`` per kind, each in a struct column of its
    own, each part in one task (one file).
    """
    events = batch.select(*event_columns(registry.contract))
    pieces = [lane_log.rows("events", batch)] if keep_events else []
    for view in registry:
        own = events if context is None else context.view_input(view, events, held or [])
        pieces.append(lane_log.rows(view.name, view.compute(own, ctx)))
    return lane_log.one_frame(pieces)


def start_floor(
    spark: SparkSession,
    settings: Settings,
    on_commit: OnCommit | None = None,
    views: ViewRegistry | None = None,
    deduplicate: bool = False,
    keep_events: bool = True,
    join_context: bool = True,
) -> tuple[StreamingQuery, list[tuple[float, float]]]:
    """Start the floor query; returns it and the list its micro-batches go to.

    ``on_commit(batch, batch_id, committed_at)`` runs after each micro-batch's commit,
    on the (persisted) batch, e.g. to note when a probe became visible. ``views``: the
    views whose contributions the same commit carries (the module docstring).
    ``deduplicate``: copies of an event id count once however far apart (Spark's
    ``dropDuplicates`` over every id read, the state the contract requires of any
    design), so the floor does what correctness requires before the views. Without
    ``keep_events``, a commit with views carries only them (the floor of a replay, whose
    views need no event kept). ``join_context``: a joining view meets its partners from
    earlier micro-batches (the module docstring). Each micro-batch is noted as
    ``(committed at, seconds it took)``.
    """
    table = f"{settings.storage.uri()}/floor_events"
    durations: list[tuple[float, float]] = []
    context = HeldContext(views, settings.views) if views is not None and join_context else None
    if views is not None:
        catalog_ends = end_offsets(settings, settings.kafka.catalog_topic)
        ctx = ViewContext(
            settings.views,
            read_catalog(spark, settings, catalog_ends).persist(),
            read_catalog_versions(spark, settings, catalog_ends).persist(),
        )

    def append(batch: DataFrame, batch_id: int) -> None:
        started = time.perf_counter()
        # With views, every view reads the micro-batch in one union, and a persisted batch
        # served only one branch from its cache: each other view ran the micro-batch's
        # de-duplication again (a 1M replay took 38-41 s instead of 20 s). Kept rows are
        # read as they are by every branch.
        batch = batch.persist() if views is None else kept(batch)
        held: list[DataFrame] = []
        try:
            if views is None:
                writer = batch.write
            else:
                frame = _with_views(
                    batch, views, ctx, keep_events=keep_events, context=context, held=held
                )
                writer = frame.write.partitionBy(PART).option("mergeSchema", "true")
            (
                writer.format("delta")
                .mode("append")
                .option("txnAppId", "floor")
                .option("txnVersion", batch_id)
                .save(table)
            )
            committed = time.time()
            durations.append((committed, time.perf_counter() - started))
            if on_commit is not None:
                on_commit(batch, batch_id, committed)
        finally:
            for partners in held:
                partners.unpersist()
            if views is None:
                batch.unpersist()
            else:
                if context is not None:
                    events = kept(batch.select(*event_columns(views.contract)))
                    if not context.add(events):
                        released(events)
                released(batch)

    valid = decode_events(read_stream(spark, settings, settings.kafka.events_topic)).where(
        F.col("reason").isNull()
    )
    if deduplicate:
        valid = valid.dropDuplicates([views.contract.id_field if views else "event_id"])
    query = (
        valid.writeStream.foreachBatch(append)
        .option("checkpointLocation", f"{settings.storage.uri()}/_checkpoints/floor")
        .trigger(processingTime=settings.stream.trigger_interval)
        .start()
    )
    return query, durations


def processed_offsets(query: StreamingQuery) -> dict[int, int]:
    """The end offsets (per partition) of the query's last micro-batch."""
    progress = query.lastProgress
    if not progress or not progress.get("sources"):
        return {}
    end = source_offsets(progress["sources"][0].get("endOffset"))
    return {int(p): int(o) for topic in end.values() for p, o in topic.items()}


def reached(query: StreamingQuery, ends: dict[int, int]) -> bool:
    """Whether the query's last micro-batch read every partition up to ``ends``."""
    return reaches(processed_offsets(query), ends)


def run_to(query: StreamingQuery, ends: dict[int, int], poll_s: float = 0.05) -> None:
    """Wait until ``query`` has read up to ``ends``, then stop it.

    A query that fails on the way raises its failure here (``awaitTermination``); one
    that ends by itself ends the wait.
    """
    try:
        while not reached(query, ends):
            if query.awaitTermination(poll_s):  # type: ignore[arg-type]  # float s (pyspark: int)
                break
    finally:
        query.stop()
