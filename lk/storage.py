"""Filesystem-neutral helpers (local disk, HDFS, S3) through Spark's Hadoop client."""

from __future__ import annotations

from pyspark.sql import SparkSession


def _fs_path(spark: SparkSession, uri: str):
    jvm = spark.sparkContext._jvm
    path = jvm.org.apache.hadoop.fs.Path(uri)
    return path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()), path


def exists(spark: SparkSession, uri: str) -> bool:
    """Whether anything is stored at ``uri``."""
    fs, path = _fs_path(spark, uri)
    return bool(fs.exists(path))


def delete(spark: SparkSession, uri: str) -> bool:
    """Delete ``uri`` recursively; true if something was deleted."""
    fs, path = _fs_path(spark, uri)
    return bool(fs.delete(path, True))


def is_delta_table(spark: SparkSession, uri: str) -> bool:
    """Whether ``uri`` holds a Delta table (has a ``_delta_log``)."""
    return exists(spark, f"{uri}/_delta_log")
