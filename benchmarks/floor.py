"""The floor: the least any Spark + Delta speed layer pays on this machine.

One bare Structured Streaming query with the platform's Kafka source and decoder that
appends the valid decoded events to one Delta table, idempotently
(``txnAppId``/``txnVersion``, as exactly-once requires): no de-duplication, no views,
no late-event split, no serving. The freshness and sustainable-rate benchmarks hold the
speed layer against it.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery

from event_log.decode import decode_events
from event_log.kafka_source import read_stream
from lk.config import Settings
from speed_layer.stream import source_offsets

OnCommit = Callable[[DataFrame, int, float], None]


def start_floor(
    spark: SparkSession, settings: Settings, on_commit: OnCommit | None = None
) -> tuple[StreamingQuery, list[float]]:
    """Start the floor query; returns it and the list its micro-batch durations go to.

    ``on_commit(batch, batch_id, committed_at)`` runs after each micro-batch's commit,
    on the (persisted) batch, e.g. to note when a probe became visible.
    """
    table = f"{settings.storage.uri()}/floor_events"
    durations: list[float] = []

    def append(batch: DataFrame, batch_id: int) -> None:
        started = time.perf_counter()
        batch = batch.persist()
        (
            batch.write.format("delta")
            .mode("append")
            .option("txnAppId", "floor")
            .option("txnVersion", batch_id)
            .save(table)
        )
        committed = time.time()
        durations.append(time.perf_counter() - started)
        if on_commit is not None:
            on_commit(batch, batch_id, committed)
        batch.unpersist()

    query = (
        decode_events(read_stream(spark, settings, settings.kafka.events_topic))
        .where(F.col("reason").isNull())
        .writeStream.foreachBatch(append)
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
