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
from lake.tables import Tables


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
    """Create the bronze and quarantine tables if they do not exist yet."""
    events = event_schema(contract).fields
    bronze_schema = T.StructType([*events, T.StructField("run_id", T.StringType())])
    (
        DeltaTable.createIfNotExists(spark)
        .location(tables.bronze)
        .addColumns(bronze_schema)
        .execute()
    )
    quarantine.ensure_table(spark, tables)


def land(
    spark: SparkSession,
    tables: Tables,
    raw: DataFrame,
    run_id: str,
    contract: EventContract = SHOP,
) -> Landing:
    """Decode ``raw`` Kafka rows; MERGE new events into bronze, malformed ones to quarantine.

    Idempotent: reading the same offsets twice inserts nothing the second time.
    """
    ensure_tables(spark, tables, contract)
    decoded = decode_events(raw, contract).persist()
    try:
        events = first_copies(valid_events(decoded, contract), contract.id_field)
        events = events.withColumn("run_id", F.lit(run_id))
        bronze = DeltaTable.forPath(spark, tables.bronze)
        (
            bronze.alias("b")
            .merge(events.alias("n"), f"b.`{contract.id_field}` = n.`{contract.id_field}`")
            .whenNotMatchedInsertAll()
            .execute()
        )
        landed = _inserted_rows(bronze)
        quarantine.insert_once(spark, tables, quarantined(decoded), "batch", run_id)
        bad = _inserted_rows(DeltaTable.forPath(spark, tables.quarantine))
    finally:
        decoded.unpersist()
    return Landing(landed=landed, quarantined=bad)


def _inserted_rows(table: DeltaTable) -> int:
    """Rows the newest MERGE inserted (streaming lanes may have appended since)."""
    metrics = (
        table.history(20)
        .where(F.col("operation") == "MERGE")
        .orderBy(F.col("version").desc())
        .select("operationMetrics")
        .first()
    )
    return int((metrics[0] or {}).get("numTargetRowsInserted", 0)) if metrics else 0
