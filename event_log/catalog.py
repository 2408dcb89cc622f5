"""The catalog table, rebuilt from the compacted change-data-capture topic."""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from config.settings import Settings
from event_log.decode import PRICE
from event_log.kafka_source import Offsets, read_range

PRODUCT = T.StructType(
    [
        T.StructField("product_id", T.LongType()),
        T.StructField("name", T.StringType()),
        T.StructField("category", T.StringType()),
        T.StructField("price", PRICE),
        T.StructField("updated_at", T.StringType()),
    ]
)


def catalog_table(changes: DataFrame) -> DataFrame:
    """Latest value per key (by offset); a tombstone (null value) removes the product.

    Args:
        changes: Kafka rows of the ``catalog`` topic (``key``, ``value``, ``partition``,
            ``offset``).
    """
    latest = Window.partitionBy("key").orderBy(F.col("partition").desc(), F.col("offset").desc())
    last = changes.withColumn("_rank", F.row_number().over(latest)).where("_rank = 1")
    rows = last.where(F.col("value").isNotNull()).select(
        F.from_json(F.col("value").cast("string"), PRODUCT).alias("p")
    )
    return rows.select(
        "p.product_id",
        "p.name",
        "p.category",
        "p.price",
        F.to_timestamp("p.updated_at", "yyyy-MM-dd'T'HH:mm:ss.SSS'Z'").alias("updated_at"),
    ).where(F.col("product_id").isNotNull())


def read_catalog(spark: SparkSession, settings: Settings, end: Offsets) -> DataFrame:
    """The catalog as of ``end`` (end offsets of the ``catalog`` topic)."""
    changes = read_range(spark, settings, settings.kafka.catalog_topic, {}, end)
    return catalog_table(changes)


def catalog_versions(changes: DataFrame) -> DataFrame:
    """Every version of every product the ``catalog`` topic holds, with its valid time.

    One row per change: ``product_id`` (from the key), ``category`` and ``price`` (null
    for a delete), ``valid_from`` and the change's ``partition`` and ``offset``. An
    upsert is valid from its ``updated_at`` (the change's own time); a tombstone carries
    no value, so a delete is valid from its log append time. Changes whose key is not an
    integer, or whose value has no string ``category``, are left out.

    Args:
        changes: Kafka rows of the ``catalog`` topic (``key``, ``value``, ``partition``,
            ``offset``, ``timestamp``).
    """
    product = F.from_json(F.col("value").cast("string"), PRODUCT)
    updated = F.to_timestamp(product["updated_at"], "yyyy-MM-dd'T'HH:mm:ss.SSS'Z'")
    rows = changes.select(
        F.col("key").cast("string").try_cast("long").alias("product_id"),
        F.when(F.col("value").isNotNull(), product["category"]).alias("category"),
        F.when(F.col("value").isNotNull(), product["price"]).alias("price"),
        F.when(F.col("value").isNull(), F.col("timestamp"))
        .otherwise(F.coalesce(updated, F.col("timestamp")))
        .alias("valid_from"),
        F.col("value").isNull().alias("_deleted"),
        "partition",
        "offset",
    )
    return rows.where(
        F.col("product_id").isNotNull() & (F.col("_deleted") | F.col("category").isNotNull())
    ).drop("_deleted")


def read_catalog_versions(spark: SparkSession, settings: Settings, end: Offsets) -> DataFrame:
    """Every catalog version up to ``end`` (:func:`catalog_versions`)."""
    changes = read_range(spark, settings, settings.kafka.catalog_topic, {}, end)
    return catalog_versions(changes)
