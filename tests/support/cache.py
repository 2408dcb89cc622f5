"""What a test's code left cached in the session's Spark context."""

from __future__ import annotations

from pyspark.sql import SparkSession

DELTA_STATE = "Delta Table State"  # Delta caches each table's log state itself


def cached_rdds(spark: SparkSession) -> set[int]:
    """Ids of the cached RDDs the platform's own ``persist`` calls hold (not Delta's)."""
    cached = spark.sparkContext._jsc.getPersistentRDDs()
    return {
        rdd_id
        for rdd_id in cached.keySet().toArray()
        if not (cached.get(rdd_id).name() or "").startswith(DELTA_STATE)
    }
