"""The JVM behind a SparkSession, for the few calls pyspark has no Python API for."""

from __future__ import annotations

from typing import Any

from pyspark.sql import SparkSession


def jvm(spark: SparkSession) -> Any:
    """The session's py4j view of the JVM (Hadoop file systems, metrics, ``System``).

    pyspark types it optional because a Spark Connect session has none; ``lk`` builds
    classic sessions only (:mod:`lake.spark`), so a missing one is a bug, said plainly.
    """
    gateway = spark.sparkContext._jvm
    if gateway is None:
        raise RuntimeError("this SparkSession has no JVM gateway (Spark Connect?)")
    return gateway
