"""Build and run a lane's streaming query: Kafka -> decode -> de-duplicate -> foreachBatch."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery

from event_log.decode import decode_events
from event_log.kafka_source import read_stream
from lk import storage
from lk.config import Settings
from speed_layer.lane import Lane
from speed_layer.micro_batch import Epoch, MicroBatchProcessor
from views.registry import ViewRegistry
from views.windows import interval

log = logging.getLogger(__name__)
Progress = Callable[[dict], None]


@dataclass(frozen=True)
class LaneRun:
    """How a run of a lane ended."""

    lane: str
    micro_batches: int
    input_rows: int
    seconds: float


def deduplicated_events(spark: SparkSession, settings: Settings) -> DataFrame:
    """The decoded ``events`` stream with re-sends (same ``event_id``) dropped.

    De-duplication is Spark's stateful ``dropDuplicatesWithinWatermark``, kept in the
    checkpoint. Its watermark runs on the Kafka append time, not on event time, so a
    late event is never dropped here: lateness is judged per view, downstream, where
    late events are counted and kept. Malformed records keep a key of their own.
    """
    decoded = decode_events(read_stream(spark, settings, settings.kafka.events_topic))
    key = F.when(F.col("reason").isNull(), F.col("event_id")).otherwise(
        F.format_string("malformed:%d:%d", F.col("partition"), F.col("offset"))
    )
    return (
        decoded.withColumn("_dedup_key", key)
        .withWatermark("kafka_timestamp", interval(settings.stream.dedup_horizon))
        .dropDuplicatesWithinWatermark(["_dedup_key"])
        .drop("_dedup_key")
    )


def start_lane(
    spark: SparkSession,
    settings: Settings,
    lane: Lane,
    registry: ViewRegistry,
    epoch: Callable[[], Epoch],
    *,
    until_caught_up: bool,
) -> StreamingQuery:
    """Start the lane's query (``availableNow`` when catching up, else a fixed interval)."""
    processor = MicroBatchProcessor(spark, settings, lane, registry, epoch)
    writer = (
        deduplicated_events(spark, settings)
        .writeStream.foreachBatch(processor)
        .option("checkpointLocation", lane.checkpoint)
        .queryName(lane.name.replace("-", "_"))
    )
    if until_caught_up:
        writer = writer.trigger(availableNow=True)
    else:
        writer = writer.trigger(processingTime=settings.stream.trigger_interval)
    return writer.start()


def write_metrics(spark: SparkSession, lane: Lane, query: StreamingQuery) -> dict | None:
    """Save the query's last progress (rates, durations) next to the lane for ``lk status``."""
    last = query.lastProgress
    if not last:
        return None
    metrics = {
        "batch_id": last.get("batchId"),
        "timestamp": last.get("timestamp"),
        "input_rows": last.get("numInputRows"),
        "input_rows_per_second": last.get("inputRowsPerSecond"),
        "processed_rows_per_second": last.get("processedRowsPerSecond"),
        "batch_duration_ms": (last.get("durationMs") or {}).get("triggerExecution"),
        "end_offsets": (last.get("sources") or [{}])[0].get("endOffset"),
    }
    storage.write_text(spark, f"{lane.root}/_metrics.json", json.dumps(metrics))
    return metrics


def run_lane(
    spark: SparkSession,
    settings: Settings,
    lane: Lane,
    registry: ViewRegistry,
    epoch: Callable[[], Epoch],
    *,
    until_caught_up: bool,
    on_progress: Progress | None = None,
    poll_s: float = 1.0,
) -> LaneRun:
    """Run a lane until it has caught up (or forever, until interrupted)."""
    started = time.perf_counter()
    query = start_lane(spark, settings, lane, registry, epoch, until_caught_up=until_caught_up)
    batches, rows, last_id = 0, 0, None
    try:
        while query.isActive:
            query.awaitTermination(poll_s)
            metrics = write_metrics(spark, lane, query)
            if metrics and metrics["batch_id"] != last_id:
                last_id = metrics["batch_id"]
                batches += 1
                rows += metrics["input_rows"] or 0
                if on_progress:
                    on_progress(metrics)
    except KeyboardInterrupt:
        log.info("stopping lane %s", lane.name)
    finally:
        if query.isActive:
            query.stop()
    if query.exception() is not None:
        raise RuntimeError(f"lane {lane.name} failed: {query.exception()}")
    return LaneRun(
        lane=lane.name,
        micro_batches=batches,
        input_rows=rows,
        seconds=time.perf_counter() - started,
    )
