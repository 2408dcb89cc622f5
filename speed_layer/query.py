"""A lane's streaming query: Kafka -> decode -> de-duplicate -> ``foreachBatch``.

Only how the query is built and started; running it, following its progress and
restarting it are :mod:`speed_layer.stream`'s.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery

from config.settings import Settings, format_duration
from event_log.contract import EventContract
from event_log.decode import decode_events
from event_log.kafka_source import read_stream
from lake.spark import STATE_STORE_ROWS, session_settings
from speed_layer.lane import Lane
from speed_layer.micro_batch import MicroBatchProcessor


def deduplicated_events(
    spark: SparkSession, settings: Settings, contract: EventContract
) -> DataFrame:
    """The decoded ``events`` stream with re-sends (same event id) dropped, lowest offset first.

    De-duplication is Spark's stateful ``dropDuplicates`` over every id the lane has read,
    as the batch layer and the oracle do over the whole log (``docs/semantics.md``,
    "Duplicates"): a re-send hours after its original counts once, in every design. Its
    state lives in the checkpoint (RocksDB) and grows with the log's distinct ids; no
    watermark runs here, so nothing is dropped for its time. Lateness is judged per view,
    downstream, where late events are counted and kept. Malformed records keep a key of
    their own, and only they keep the record's raw bytes (``key``, ``value``), which
    only the quarantine needs: a valid event's bytes, a few hundred per event, were
    shuffled into the state and cached with the micro-batch for nothing.

    With ``stream.dedup_horizon`` set, ids are held only that long in Kafka append time
    (``dropDuplicatesWithinWatermark``): bounded state, but a record behind the global
    watermark (a partition lagging the others by more than the horizon in a catch-up) is
    dropped. Spark counts those (``numRowsDroppedByWatermark``); the lane adds them up in
    ``_metrics.json`` (``watermark_drops``), ``lk status`` shows them, and a Kappa replay
    that dropped any is refused.
    """
    decoded = decode_events(read_stream(spark, settings, settings.kafka.events_topic), contract)
    event_id = F.col(contract.id_field).cast("string")
    malformed = F.col("reason").isNotNull()
    key = F.when(
        malformed, F.format_string("malformed:%d:%d", F.col("partition"), F.col("offset"))
    ).otherwise(event_id)
    keyed = decoded.withColumns(
        {
            "_dedup_key": key,
            "key": F.when(malformed, F.col("key")),
            "value": F.when(malformed, F.col("value")),
        }
    )
    horizon = settings.stream.dedup_horizon
    if horizon is None:
        return keyed.dropDuplicates(["_dedup_key"]).drop("_dedup_key")
    return (
        keyed.withWatermark("kafka_timestamp", format_duration(horizon))
        .dropDuplicatesWithinWatermark(["_dedup_key"])
        .drop("_dedup_key")
    )


def start_lane(
    spark: SparkSession,
    settings: Settings,
    lane: Lane,
    processor: MicroBatchProcessor,
    *,
    catching_up: bool = False,
) -> StreamingQuery:
    """Start the lane's query on a processing-time trigger.

    Catching up uses an immediate trigger and stops once the log end seen at start is
    committed: a checkpoint left by a run killed mid-batch restarts cleanly that way,
    which Spark 4.1's ``availableNow`` does not always do. It also runs no *no-data*
    micro-batch (Spark's eviction of de-duplication state when the watermark moves
    without new rows): after the last data micro-batch there is nothing left to run,
    so the stop lands between micro-batches instead of interrupting one.

    The de-duplication state counts the ids it holds only with a horizon, whose expired
    ids only Spark can count; without one, every id read is held, and the lane's
    progress rows count them (``lk status``) at no cost to the state's writes. Settings
    are copied into the query's own session at start, so they are restored at once.
    """
    interval = "0 seconds" if catching_up else settings.stream.trigger_interval
    conf = {STATE_STORE_ROWS: str(settings.stream.dedup_horizon is not None).lower()}
    if catching_up:
        conf["spark.sql.streaming.noDataMicroBatches.enabled"] = "false"
    with session_settings(spark, conf):
        return (
            deduplicated_events(spark, settings, processor.registry.contract)
            .writeStream.foreachBatch(processor)
            .option("checkpointLocation", lane.checkpoint)
            .queryName(lane.name.replace("-", "_"))
            .trigger(processingTime=interval)
            .start()
        )
