"""Filesystem-neutral helpers (local disk, HDFS, S3) through Spark's Hadoop client."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any
from urllib.parse import unquote, urlparse

from pyspark.sql import SparkSession

from lake.jvm import jvm

_COMMIT = re.compile(r"^(\d{20})\.json$")


def _fs_path(spark: SparkSession, uri: str) -> tuple[Any, Any]:
    """The Hadoop ``FileSystem`` that holds ``uri`` and its ``Path`` (py4j objects)."""
    path = jvm(spark).org.apache.hadoop.fs.Path(uri)
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


def read_text(spark: SparkSession, uri: str) -> str:
    """A small text file's content."""
    fs, path = _fs_path(spark, uri)
    stream = fs.open(path)
    try:
        java = jvm(spark).java
        reader = java.io.BufferedReader(java.io.InputStreamReader(stream, "UTF-8"))
        lines = []
        while (line := reader.readLine()) is not None:
            lines.append(line)
        return "\n".join(lines)
    finally:
        stream.close()


def write_text(spark: SparkSession, uri: str, text: str) -> None:
    """Create or replace a small text file; a reader sees the old or the new text, whole.

    The text goes to a hidden sibling first, then replaces the file by a rename (a
    reader may find no file for that instant, never a half-written one).
    """
    fs, path = _fs_path(spark, uri)
    _, staged = _fs_path(spark, f"{uri.rsplit('/', 1)[0]}/.{path.getName()}.tmp")
    stream = fs.create(staged, True)
    try:
        stream.write(bytearray(text.encode()))
    finally:
        stream.close()
    fs.delete(path, False)
    if not fs.rename(staged, path):
        raise OSError(f"could not replace {uri}")


def list_dirs(spark: SparkSession, uri: str) -> list[str]:
    """Names of the sub-folders of ``uri`` (empty if it does not exist)."""
    fs, path = _fs_path(spark, uri)
    if not fs.exists(path):
        return []
    return [s.getPath().getName() for s in fs.listStatus(path) if s.isDirectory()]


def delta_version(spark: SparkSession | None, uri: str) -> int | None:
    """The latest committed version of the Delta table at ``uri`` (None if there is none).

    Lists ``_delta_log`` only, no Spark job: the highest ``NNNN.json`` commit file (commit
    files are written atomically; old ones may be cleaned up, the newest never is).
    Local tables are listed with ``os.scandir``, so a reader probing every second costs
    no JVM call; any other URI through Spark's Hadoop client (then ``spark`` is needed).
    """
    log = f"{uri.rstrip('/')}/_delta_log"
    path = local_path(log)
    if path is not None:
        try:
            with os.scandir(path) as entries:
                names = [entry.name for entry in entries]
        except (FileNotFoundError, NotADirectoryError):
            return None
    elif spark is None:
        raise ValueError(f"a SparkSession is needed to list {log}")
    else:
        fs, hadoop_path = _fs_path(spark, log)
        if not fs.exists(hadoop_path):
            return None
        names = [status.getPath().getName() for status in fs.listStatus(hadoop_path)]
    versions = [int(m.group(1)) for name in names if (m := _COMMIT.match(name))]
    return max(versions, default=None)


def commit_actions(spark: SparkSession, uri: str, version: int) -> list[dict[str, Any]]:
    """The actions of one Delta commit (``add``, ``remove``, ``commitInfo``, ...).

    Read from its JSON file: no Spark job, where ``DeltaTable.history`` or ``detail`` run
    one (seconds each in a fresh JVM, most of a small batch run's landing).
    """
    log = f"{uri.rstrip('/')}/_delta_log/{version:020d}.json"
    path = local_path(log)
    if path is not None:
        with open(path, encoding="utf-8") as file:
            text = file.read()
    else:
        text = read_text(spark, log)
    return [json.loads(line) for line in text.splitlines() if line.strip()]


SAME_ANSWERS = "same answers"
"""The note (``commitInfo.userMetadata``) of a commit that rewrote rows without changing
any merged result: a lane's compaction. Readers that merge what they read may skip it."""


def appended(
    spark: SparkSession,
    uri: str,
    since: int,
    until: int,
    partition: Mapping[str, str] | None = None,
    *,
    most: int | None = None,
) -> list[dict[str, Any]] | None:
    """The ``add`` actions of the files commits after ``since`` up to ``until`` added.

    To ``partition``, in commit order, each with its ``path`` made absolute. None
    unless those commits only appended there, so that the rows at ``until`` are the
    rows at ``since`` plus these files, as far as a reader that merges them can tell:
    a file removed from the partition (a delete, a restore), a file added again without
    new data (``dataChange`` false), a deletion vector, a change of schema or protocol,
    an action that does not say its partition, a commit file no longer kept, a path
    Spark would read as a pattern, or more than ``most`` files all mean "read it whole".
    A commit noted :data:`SAME_ANSWERS` is passed over, and so is one that only
    rearranged files (Delta's ``OPTIMIZE``, every file it added and removed with
    ``dataChange`` false): a file it removed stays listed, and readable until a VACUUM
    finds it older than the table's retention (a reader that reads files added after an
    old version bounds that version's age by it). ``partition`` maps partition columns
    to values (None: the whole table). Read from the commit files alone, no Spark job.
    """
    root = uri.rstrip("/")
    added: list[dict[str, Any]] = []
    for version in range(since + 1, until + 1):
        try:
            actions = commit_actions(spark, uri, version)
        except Exception:  # a missing or unreadable commit file (OSError, or py4j's)
            return None
        info: dict[str, Any] = next((a["commitInfo"] for a in actions if "commitInfo" in a), {})
        if info.get("userMetadata") == SAME_ANSWERS or _rearranged(info, actions):
            continue
        for action in actions:
            if "metaData" in action or "protocol" in action:
                return None
            for kind in ("add", "remove"):
                change = action.get(kind)
                if change is None:
                    continue
                touches = _touches(change, partition)
                if touches is None:
                    return None  # it does not say its partition: it may be ours
                if not touches:
                    continue
                if kind == "remove" or not change.get("dataChange", True):
                    return None
                if change.get("deletionVector") or _GLOB.search(change["path"]):
                    return None
                added.append({**change, "path": _absolute(root, change["path"])})
        if most is not None and len(added) > most:
            return None
    return added


def _rearranged(info: Mapping[str, Any], actions: list[dict[str, Any]]) -> bool:
    """Whether a commit is Delta's OPTIMIZE and changed no data: the same rows in other files."""
    changes = [a[kind] for a in actions for kind in ("add", "remove") if kind in a]
    return info.get("operation") == "OPTIMIZE" and not any(
        c.get("dataChange", True) for c in changes
    )


def appended_files(
    spark: SparkSession,
    uri: str,
    since: int,
    until: int,
    partition: Mapping[str, str] | None = None,
    *,
    most: int | None = None,
) -> list[str] | None:
    """The paths of the files :func:`appended` lists; None when it says "read it whole"."""
    added = appended(spark, uri, since, until, partition, most=most)
    return None if added is None else [a["path"] for a in added]


def earliest(added: list[dict[str, Any]], column: str) -> datetime | None:
    """The earliest value of timestamp ``column`` (``struct.field``) in the files ``added``.

    From each file's statistics as Delta wrote them (``2026-01-01T00:00:00.000Z``,
    truncated to the millisecond: never later than the value), as naive UTC. None when
    a file has no statistics for it, or ``added`` is empty.
    """
    values = []
    for action in added:
        node: Any = json.loads(action.get("stats") or "{}").get("minValues", {})
        for name in column.split("."):
            node = node.get(name) if isinstance(node, dict) else None
        if not isinstance(node, str):
            return None
        values.append(datetime.fromisoformat(node).astimezone(UTC).replace(tzinfo=None))
    return min(values, default=None)


def _absolute(root: str, path: str) -> str:
    """A commit's (relative, URL-encoded) file path as the path readers open."""
    path = unquote(path)
    return path if urlparse(path).scheme else f"{root}/{path}"


def commit_stamp(spark: SparkSession, uri: str, version: int) -> str | None:
    """What tells commit ``version`` from another with the same number; None if it is gone.

    A table deleted and written again (a lane's recovery does that to a log its crashed
    first micro-batch created) numbers its commits from 0 again: its ``commitInfo``
    (time, transaction id) is what differs.
    """
    try:
        actions = commit_actions(spark, uri, version)
    except Exception:  # a missing or unreadable commit file (OSError, or py4j's)
        return None
    info = next((a["commitInfo"] for a in actions if "commitInfo" in a), None)
    return None if info is None else json.dumps(info, sort_keys=True)


_GLOB = re.compile(r"[*?\[\]{}\\]")
"""Characters Spark's reader would expand as a glob pattern in a path."""


def _touches(change: Mapping[str, Any], partition: Mapping[str, str] | None) -> bool | None:
    """Whether an ``add`` or ``remove`` touches ``partition``; None when it does not say."""
    if partition is None:
        return True
    values = change.get("partitionValues")
    if values is None or any(key not in values for key in partition):
        return None
    return all(values[key] == value for key, value in partition.items())


def local_path(uri: str) -> str | None:
    """The filesystem path of a ``file:`` URI or a plain path; None for remote URIs."""
    if "://" not in uri and not uri.startswith("file:"):
        return uri
    parsed = urlparse(uri)
    return unquote(parsed.path) if parsed.scheme == "file" else None


def delete_file(spark: SparkSession, uri: str) -> bool:
    """Delete one file if it exists."""
    fs, path = _fs_path(spark, uri)
    return bool(fs.exists(path) and fs.delete(path, False))


def list_files(spark: SparkSession, uri: str) -> list[str]:
    """Names of the files directly under ``uri`` (empty if it does not exist)."""
    fs, path = _fs_path(spark, uri)
    if not fs.exists(path):
        return []
    return [s.getPath().getName() for s in fs.listStatus(path) if s.isFile()]


def table_size(spark: SparkSession, uri: str) -> dict[str, int] | None:
    """What a Delta table holds and what it keeps on storage (None if there is no table).

    ``files``/``bytes``: the data files its current version reads; ``stored_files``/
    ``stored_bytes``: everything under its directory, the files older versions read and
    the log included (what retention and VACUUM bound); ``log_files``: the log's own.
    """
    if not is_delta_table(spark, uri):
        return None
    detail = spark.sql(f"DESCRIBE DETAIL delta.`{uri}`").select("numFiles", "sizeInBytes").first()
    fs, path = _fs_path(spark, uri)
    stored = fs.getContentSummary(path)
    log_fs, log_path = _fs_path(spark, f"{uri.rstrip('/')}/_delta_log")
    return {
        "files": int(detail["numFiles"] or 0) if detail else 0,
        "bytes": int(detail["sizeInBytes"] or 0) if detail else 0,
        "stored_files": int(stored.getFileCount()),
        "stored_bytes": int(stored.getLength()),
        "log_files": int(log_fs.getContentSummary(log_path).getFileCount()),
    }
