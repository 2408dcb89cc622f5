"""Insert the rows a Delta table does not hold yet: idempotent landing for one writer.

A MERGE that inserts only unmatched rows makes re-reading the same offsets a no-op, but
it joins the new rows with the whole table first, even an empty one: on a first batch
run over a few thousand events that join was most of the landing's time. While the
table holds no file at all (nothing landed yet, not even by a run that died midway)
nothing can match, and a plain append inserts the same rows; with no table yet, that
append creates it (a table created first cost a first run seconds of its own). Only the
batch layer writes these tables (one writer), so nothing lands between the look and
the append.
"""

from __future__ import annotations

from delta.tables import DeltaTable
from py4j.protocol import Py4JJavaError
from pyspark.sql import DataFrame, SparkSession

from lake.storage import commit_actions, delta_version

#: what each write operation calls the rows it inserted (``operationMetrics``)
INSERTED = {"MERGE": "numTargetRowsInserted", "WRITE": "numOutputRows"}


def insert_new(spark: SparkSession, path: str, rows: DataFrame, matches: str) -> int:
    """Insert the ``rows`` (alias ``n``) no row of the table (alias ``t``) ``matches``.

    With no table at ``path`` yet, the append creates it with the rows' schema.

    Returns:
        How many rows were inserted.
    """
    before = delta_version(spark, path)
    if before is None or not _holds_files(spark, path, before):
        rows.write.format("delta").mode("append").save(path)
    else:
        table = DeltaTable.forPath(spark, path)
        table.alias("t").merge(rows.alias("n"), matches).whenNotMatchedInsertAll().execute()
    return inserted_rows(spark, path, after=-1 if before is None else before)


def _holds_files(spark: SparkSession, path: str, version: int) -> bool:
    """Whether the table at ``version`` may hold data: any commit up to it added a file.

    Read from the commit files, no Spark job; a table past a checkpoint (its first commits
    cleaned up) counts as holding files, so it takes the MERGE, which is always right.
    """
    try:
        return any(
            "add" in action for v in range(version + 1) for action in commit_actions(spark, path, v)
        )
    except (FileNotFoundError, Py4JJavaError):  # cleaned up (S3 says so through the JVM)
        return True


def inserted_rows(spark: SparkSession, path: str, after: int) -> int:
    """Rows the inserts (MERGEs or appends) committed after version ``after`` added.

    A MERGE that matched every row commits nothing, so no commit after ``after`` means 0.
    Read from the commits' ``commitInfo``, no Spark job.
    """
    latest = delta_version(spark, path) or 0
    inserted = 0
    for version in range(after + 1, latest + 1):
        for action in commit_actions(spark, path, version):
            info = action.get("commitInfo")
            if info and info.get("operation") in INSERTED:
                metrics = info.get("operationMetrics") or {}
                inserted += int(metrics.get(INSERTED[info["operation"]], 0))
    return inserted
