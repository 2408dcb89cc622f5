"""Spark readers of the Kafka topics, batch (an offset range) and streaming."""

from __future__ import annotations

import json
from collections.abc import Mapping

from kafka.errors import KafkaError
from pyspark.sql import DataFrame, SparkSession

from config.settings import Settings

Offsets = Mapping[int, int]


def offsets_json(topic: str, offsets: Offsets) -> str:
    """Spark's ``{"topic": {"0": 12, ...}}`` offset notation."""
    return json.dumps({topic: {str(p): int(o) for p, o in sorted(offsets.items())}})


OFFSETS_PER_TASK = 250_000  # a bounded read splits longer ranges: memory per task stays bounded


def _options(settings: Settings, topic: str) -> dict[str, str]:
    return {
        "kafka.bootstrap.servers": settings.kafka.bootstrap_servers,
        "subscribe": topic,
        "failOnDataLoss": "true",
        **settings.kafka.spark_options,
    }


def read_range(
    spark: SparkSession, settings: Settings, topic: str, start: Offsets, end: Offsets
) -> DataFrame:
    """The records of ``topic`` in ``[start, end)`` per partition (a bounded batch read)."""
    partitions = {p: start.get(p, 0) for p in end}
    if all(partitions[p] >= end[p] for p in end):
        return spark.createDataFrame(
            [],
            "key binary, value binary, topic string, partition int, offset long, "
            "timestamp timestamp, timestampType int",
        )
    return (
        spark.read.format("kafka")
        .options(**_options(settings, topic))
        .option("startingOffsets", offsets_json(topic, partitions))
        .option("endingOffsets", offsets_json(topic, end))
        .option("maxRecordsPerPartition", str(OFFSETS_PER_TASK))
        .load()
    )


def read_stream(
    spark: SparkSession, settings: Settings, topic: str, starting: Offsets | str = "earliest"
) -> DataFrame:
    """A streaming read of ``topic`` with the configured per-micro-batch offset cap.

    Like :func:`read_range`, a micro-batch is split into tasks of at most
    ``OFFSETS_PER_TASK`` offsets.
    """
    start = starting if isinstance(starting, str) else offsets_json(topic, starting)
    return (
        spark.readStream.format("kafka")
        .options(**_options(settings, topic))
        .option("startingOffsets", start)
        .option("maxOffsetsPerTrigger", str(settings.stream.max_offsets_per_trigger))
        .option("maxRecordsPerPartition", str(OFFSETS_PER_TASK))
        .load()
    )


#: What Spark's Kafka source says when the log is out of reach for a while: a broker, or a
#: partition's leader, did not answer in time. Offsets that are gone are never among it.
_AWAY = (
    "org.apache.kafka.common.errors.",
    "org.apache.kafka.common.KafkaException",
    "Cannot fetch record for offset",  # an executor's poll came back empty for too long
)
_GONE = ("OffsetOutOfRange", "Some data may have been lost")


def log_unreachable(error: BaseException) -> bool:
    """Whether ``error`` says the log was out of reach (retry later), not that data is gone.

    Both Kafka clients count: Spark's (its message, through py4j) and kafka-python's
    (a retriable :class:`~kafka.errors.KafkaError`, from offset lookups).
    """
    if isinstance(error, KafkaError):
        return bool(error.retriable)
    text = str(error)
    return any(m in text for m in _AWAY) and not any(m in text for m in _GONE)
