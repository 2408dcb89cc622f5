"""What a test's code left cached in the session's Spark context."""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession

DELTA_STATE = "Delta Table State"  # Delta caches each table's log state itself


def cached_rdds(spark: SparkSession) -> set[int]:
    """Ids of the cached RDDs the platform's own ``persist`` calls hold (not Delta's)."""
    cached = spark.sparkContext._jsc.getPersistentRDDs()
    return {
        rdd_id
        for rdd_id in cached.keySet().toArray()
        if not (cached.get(rdd_id).name() or "").startswith(DELTA_STATE)
    }


def holds(spark: SparkSession, frame: DataFrame) -> bool:
    """Whether the session still holds the rows :func:`lake.kept.kept` kept for ``frame``."""
    rdd = frame._jdf.logicalPlan().rdd()
    return spark.sparkContext._jsc.sc().getPersistentRDDs().contains(rdd.id())
