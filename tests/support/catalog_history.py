"""A small catalog history with known versions, as Kafka would store it (with append times)."""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import Decimal

from pyspark.sql import DataFrame, SparkSession

import oracle
from event_log.schema import Product

T0 = datetime(2026, 11, 1, 10, 0, 0)
#: the log's append time of every change: long after the events (a replay today)
APPENDED = datetime(2026, 11, 20)


def _ms(moment: datetime) -> int:
    return (moment - datetime(1970, 1, 1)) // timedelta(milliseconds=1)


def product(pid: int, category: str, updated_at: datetime) -> bytes:
    """A catalog upsert's value."""
    return Product(pid, f"P{pid}", category, Decimal("1.00"), updated_at).to_json()


def history_records(deleted_at: datetime = APPENDED) -> list[oracle.RawRecord]:
    """Product 1: books, toys from T0 + 5 min. Product 2: garden, deleted (appended at
    ``deleted_at``). Product 3: music from T0 + 10 min only."""
    changes = [
        (b"1", product(1, "books", T0 - timedelta(hours=1)), APPENDED),
        (b"2", product(2, "garden", T0 - timedelta(hours=1)), APPENDED),
        (b"1", product(1, "toys", T0 + timedelta(minutes=5)), APPENDED),
        (b"2", None, deleted_at),
        (b"3", product(3, "music", T0 + timedelta(minutes=10)), APPENDED),
    ]
    return [
        oracle.RawRecord(0, offset, key, value, _ms(appended))
        for offset, (key, value, appended) in enumerate(changes)
    ]


def changes_frame(spark: SparkSession, records: list[oracle.RawRecord]) -> DataFrame:
    """The records shaped like Spark's Kafka source (append time as ``timestamp``)."""
    rows = [
        (
            r.key,
            r.value,
            "catalog",
            r.partition,
            r.offset,
            datetime(1970, 1, 1) + timedelta(milliseconds=r.timestamp or 0),
            0,
        )
        for r in records
    ]
    return spark.createDataFrame(
        rows,
        "key binary, value binary, topic string, partition int, offset long, "
        "timestamp timestamp, timestampType int",
    )
