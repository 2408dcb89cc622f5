"""Cheap Delta table version probes: list ``_delta_log``, never run a Spark job.

A reader that keeps a copy of a table only has to reload it when the table's latest
commit changes. The latest version is the highest ``NNNNNNNNNNNNNNNNNNNN.json`` commit
file in the table's ``_delta_log`` (commit files are written atomically; old ones may
be cleaned up, the newest never is). Local tables are listed with ``os.scandir``; any
other URI (``s3a://``, ``abfss://``, ...) through Spark's Hadoop client, so it works
wherever the platform's storage root does.
"""

from __future__ import annotations

import os
import re
from urllib.parse import unquote, urlparse

from pyspark.sql import SparkSession

_COMMIT = re.compile(r"^(\d{20})\.json$")


def latest_commit(names: list[str]) -> int | None:
    """The highest commit version among ``_delta_log`` file names, or None if none is a commit.

    Args:
        names: file names found in a ``_delta_log`` folder.

    Returns:
        The latest version, or None when there is no commit file.
    """
    versions = [int(m.group(1)) for name in names if (m := _COMMIT.match(name))]
    return max(versions, default=None)


def local_path(uri: str) -> str | None:
    """The filesystem path of a ``file:`` URI or a plain path; None for remote URIs."""
    if "://" not in uri and not uri.startswith("file:"):
        return uri
    parsed = urlparse(uri)
    return unquote(parsed.path) if parsed.scheme == "file" else None


def _list_local(path: str) -> list[str] | None:
    try:
        with os.scandir(path) as entries:
            return [entry.name for entry in entries]
    except (FileNotFoundError, NotADirectoryError):
        return None


def _list_hadoop(spark: SparkSession, uri: str) -> list[str] | None:
    jvm = spark.sparkContext._jvm
    path = jvm.org.apache.hadoop.fs.Path(uri)
    fs = path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
    if not fs.exists(path):
        return None
    return [status.getPath().getName() for status in fs.listStatus(path)]


def table_version(spark: SparkSession | None, uri: str) -> int | None:
    """The latest committed version of the Delta table at ``uri``.

    Args:
        spark: a session whose Hadoop configuration reaches remote storage; only used
            for non-local URIs (may be None when every URI is local).
        uri: the table's root URI (``file:/...``, a plain path, or any Hadoop URI).

    Returns:
        The version, or None if there is no Delta table at ``uri`` (yet).
    """
    log = f"{uri.rstrip('/')}/_delta_log"
    path = local_path(log)
    if path is not None:
        names = _list_local(path)
    elif spark is None:
        raise ValueError(f"a SparkSession is needed to list {log}")
    else:
        names = _list_hadoop(spark, log)
    return None if names is None else latest_commit(names)
