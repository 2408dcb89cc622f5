"""Land raw Kafka records in the bronze table (valid, de-duplicated) and the quarantine."""

from __future__ import annotations

from dataclasses import dataclass

from delta.tables import DeltaTable
from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from event_log.contract import EventContract
from event_log.decode import decode_events, event_schema, quarantined, valid_events
from event_log.schema import SHOP
from lake import quarantine
from lake.insert import insert_new
from lake.storage import delta_version
from lake.tables import Tables
from lake.threads import in_background


@dataclass(frozen=True)
class Landing:
    """Rows a landing added (after de-duplication) and rows it quarantined."""

    landed: int
    quarantined: int


def first_copies(events: DataFrame, id_field: str = SHOP.id_field) -> DataFrame:
    """One row per event id: the copy at the lowest (partition, offset)."""
    first = Window.partitionBy(id_field).orderBy("partition", "offset")
    return events.withColumn("_copy", F.row_number().over(first)).where("_copy = 1").drop("_copy")


def ensure_tables(spark: SparkSession, tables: Tables, contract: EventContract = SHOP) -> None:
    """Create the bronze and quarantine tables if they do not exist yet.

    A table that exists costs a listing of its log, not a Spark action (seconds in a
    fresh JVM).
    """
    _ensure_bronze(spark, tables, contract)
    quarantine.ensure_table(spark, tables)


def _ensure_bronze(spark: SparkSession, tables: Tables, contract: EventContract) -> None:
    """Create bronze with the contract's columns, its required ones ``NOT NULL``.

    Created first, not by the first landing's append: Delta makes every column of a
    table created by a write nullable, and the constraint guards bronze's writes.
    """
    if delta_version(spark, tables.bronze) is None:
        events = event_schema(contract).fields
        bronze_schema = T.StructType([*events, T.StructField("run_id", T.StringType())])
        (
            DeltaTable.createIfNotExists(spark)
            .location(tables.bronze)
            .addColumns(bronze_schema)
            .execute()
        )


def land(
    spark: SparkSession,
    tables: Tables,
    raw: DataFrame,
    run_id: str,
    contract: EventContract = SHOP,
) -> Landing:
    """Decode ``raw`` Kafka rows; insert new events into bronze, malformed ones to quarantine.

    Idempotent: reading the same offsets twice inserts nothing the second time. The two
    tables are written side by side (on a small run each write is mostly the driver's
    planning and Delta's commit, which overlap the other's tasks); the first landing
    creates the quarantine by its append (:func:`lake.insert.insert_new`), whose
    columns are all nullable anyway.
    """
    decoded = decode_events(raw, contract).persist()

    def to_quarantine() -> int:
        return quarantine.insert_once(spark, tables, quarantined(decoded), "batch", run_id)

    try:
        quarantining = in_background(to_quarantine)
        try:
            _ensure_bronze(spark, tables, contract)
            events = first_copies(valid_events(decoded, contract), contract.id_field)
            events = events.withColumn("run_id", F.lit(run_id))
            key = contract.id_field
            landed = insert_new(spark, tables.bronze, events, f"t.`{key}` = n.`{key}`")
        finally:
            bad = quarantining()
    finally:
        decoded.unpersist()
    return Landing(landed=landed, quarantined=bad)
