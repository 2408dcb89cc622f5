"""Read a Delta table's own log in tests: what its commits added."""

from __future__ import annotations

from pyspark.sql import SparkSession


def files_added_per_part(spark: SparkSession, table: str) -> dict[str, int]:
    """Data files the table's commits added, per value of its ``part`` partition column."""
    log = spark.read.json(f"{table}/_delta_log/*.json").where("add IS NOT NULL")
    counts = log.groupBy("add.partitionValues.part").count().collect()
    return {row.part: row["count"] for row in counts}


def commits(spark: SparkSession, table: str) -> int:
    """How many commits the table's log holds."""
    return spark.read.json(f"{table}/_delta_log/*.json").where("commitInfo IS NOT NULL").count()


def files_in_commit(spark: SparkSession, table: str, version: int, action: str) -> set[str]:
    """Paths of the data files commit ``version`` added (``add``) or removed (``remove``)."""
    log = spark.read.json(f"{table}/_delta_log/{version:020d}.json")
    if action not in log.columns:
        return set()
    paths = log.where(f"{action} IS NOT NULL").select(f"{action}.path")
    return {row.path for row in paths.collect()}
