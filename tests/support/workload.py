"""Generated workloads as Kafka would store them, and comparison with the oracle."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.testing import assertDataFrameEqual

import oracle
from batch_layer.bronze import first_copies
from config.settings import ViewSettings
from event_log.catalog import catalog_table, catalog_versions
from event_log.decode import decode_events, valid_events
from views.base import ViewContext
from workload.generator import Record, WorkloadSpec, generate
from workload.producer import partition_for

KAFKA_SCHEMA = (
    "key binary, value binary, topic string, partition int, offset long, "
    "timestamp timestamp, timestampType int"
)
APPROX = "distinct_users_approx"
APPROX_TOLERANCE = 0.05
#: the append time of a record the generator left to the broker's clock
LOGGED_AT = datetime(2026, 11, 22)
LOGGED_AT_MS = (LOGGED_AT - datetime(1970, 1, 1)) // timedelta(milliseconds=1)


def _time(record: oracle.RawRecord) -> datetime:
    if record.timestamp is None:
        return LOGGED_AT
    return datetime(1970, 1, 1) + timedelta(milliseconds=record.timestamp)


def as_logged(records: Iterable[Record], topic: str, partitions: int) -> list[oracle.RawRecord]:
    """Records of one topic with the partition, offset and append time Kafka gives them."""
    next_offset: dict[int, int] = defaultdict(int)
    logged = []
    for record in records:
        if record.topic != topic:
            continue
        partition = partition_for(record.key, partitions)
        stamp = LOGGED_AT_MS if record.timestamp_ms is None else record.timestamp_ms
        offset = next_offset[partition]
        logged.append(oracle.RawRecord(partition, offset, record.key, record.value, stamp))
        next_offset[partition] += 1
    return logged


def kafka_frame(spark: SparkSession, logged: Sequence[oracle.RawRecord]) -> DataFrame:
    """A DataFrame shaped like Spark's Kafka source over ``logged``."""
    rows = [(r.key, r.value, "events", r.partition, r.offset, _time(r), 0) for r in logged]
    return spark.createDataFrame(rows, KAFKA_SCHEMA)


ViewInputs = tuple[list[oracle.RawRecord], list[oracle.RawRecord], DataFrame, ViewContext]
"""A workload's event and catalog records as logged, its first copies decoded, the context."""


def view_inputs(spark: SparkSession, spec: WorkloadSpec, partitions: int = 3) -> ViewInputs:
    """What the views compute over ``spec``, as the batch layer reads it (kept in the session)."""
    records = list(generate(spec))
    events = as_logged(records, "events", partitions)
    catalog = as_logged(records, "catalog", 1)
    decoded = valid_events(decode_events(kafka_frame(spark, events)))
    changes = kafka_frame(spark, catalog)
    ctx = ViewContext(
        ViewSettings(), catalog_table(changes).cache(), catalog_versions(changes).cache()
    )
    return events, catalog, first_copies(decoded).cache(), ctx


def oracle_views(
    events: Sequence[oracle.RawRecord],
    catalog: Sequence[oracle.RawRecord],
    settings: ViewSettings,
) -> dict[str, list[dict]]:
    """Every view, computed by the oracle from the raw records."""
    decoded, _ = oracle.decode(events)
    return oracle.compute_views(oracle.dedup(decoded), oracle.catalog_state(catalog), settings)


def assert_view_matches(actual: DataFrame, expected: list[dict], name: str) -> None:
    """Exact equality, except the HLL column, which must be within 5% of the exact count."""
    spark = actual.sparkSession
    columns = [c for c in actual.columns if c != APPROX]
    expected_df = (
        spark.createDataFrame(
            [tuple(row[c] for c in columns) for row in expected], actual.select(columns).schema
        )
        if expected
        else spark.createDataFrame([], actual.select(columns).schema)
    )
    assertDataFrameEqual(actual.select(columns), expected_df)
    if APPROX in actual.columns:
        worst = actual.select(
            F.max(F.abs(F.col(APPROX) - F.col("distinct_users")) / F.col("distinct_users"))
        ).first()[0]
        assert worst is None or worst <= APPROX_TOLERANCE, f"{name}: HLL error {worst:.3f}"
