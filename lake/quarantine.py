"""The quarantine: malformed records of every layer, with raw bytes, offset and reason.

Shared by the batch layer (MERGE: a re-read inserts nothing twice) and the streaming
lanes (append, rows tagged with the lane's attempt so crash recovery can take back
exactly an undone micro-batch's rows).
"""

from __future__ import annotations

from delta.tables import DeltaTable
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from lake import storage
from lake.insert import insert_new
from lake.tables import Tables

QUARANTINE_SCHEMA = (
    "layer string, partition int, offset long, kafka_timestamp timestamp, key binary, "
    "value binary, reason string, run_id string"
)


def ensure_table(spark: SparkSession, tables: Tables) -> None:
    """Create the quarantine table if it does not exist yet (a listing when it does)."""
    if storage.delta_version(spark, tables.quarantine) is not None:
        return
    (
        DeltaTable.createIfNotExists(spark)
        .location(tables.quarantine)
        .addColumns(spark.createDataFrame([], QUARANTINE_SCHEMA).schema)
        .execute()
    )


def quarantine_rows(rows: DataFrame, layer: str, run_id: str) -> DataFrame:
    """Malformed records as quarantine rows of ``layer``'s run ``run_id``."""
    return rows.select(
        F.lit(layer).alias("layer"),
        "partition",
        "offset",
        "kafka_timestamp",
        "key",
        "value",
        "reason",
        F.lit(run_id).alias("run_id"),
    )


def insert_once(
    spark: SparkSession, tables: Tables, rows: DataFrame, layer: str, run_id: str
) -> int:
    """Insert malformed records once per (layer, partition, offset): re-reads are no-ops.

    Returns how many were inserted.
    """
    source = quarantine_rows(rows, layer, run_id)
    matches = "t.layer = n.layer AND t.partition = n.partition AND t.offset = n.offset"
    return insert_new(spark, tables.quarantine, source, matches)


def forget_quarantined(
    spark: SparkSession, tables: Tables, layer: str, run_id: str | None = None
) -> None:
    """Delete ``layer``'s quarantine rows (only run ``run_id``'s, if given)."""
    if not storage.is_delta_table(spark, tables.quarantine):
        return
    condition = F.col("layer") == layer
    if run_id is not None:
        condition &= F.col("run_id") == run_id
    DeltaTable.forPath(spark, tables.quarantine).delete(condition)
