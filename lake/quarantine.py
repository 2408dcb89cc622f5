"""The quarantine table: malformed records the batch layer read, with raw bytes, offset, reason.

Its one writer is the batch run (a MERGE: a re-read inserts nothing twice). A streaming
lane keeps its malformed records in its own log (the ``quarantine`` part of
:mod:`speed_layer.lane_log`), committed with the micro-batch that read them, so a
recovery that undoes a micro-batch takes them back with it; the schema is this one.
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
