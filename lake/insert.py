"""Insert the rows a Delta table does not hold yet: idempotent landing for one writer.

A MERGE that inserts only unmatched rows makes re-reading the same offsets a no-op, but
it joins the new rows with the whole table first, even an empty one: on a first batch
run over a few thousand events that join was most of the landing's time. While the
table holds no file at all (nothing landed yet, not even by a run that died midway)
nothing can match, and a plain append inserts the same rows. Only the batch layer
writes these tables (one writer), so nothing lands between the look and the append.
"""

from __future__ import annotations

from delta.tables import DeltaTable
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from lake.storage import delta_version

#: what each write operation calls the rows it inserted (``operationMetrics``)
INSERTED = {"MERGE": "numTargetRowsInserted", "WRITE": "numOutputRows"}


def insert_new(spark: SparkSession, path: str, rows: DataFrame, matches: str) -> int:
    """Insert the ``rows`` (alias ``n``) no row of the table (alias ``t``) ``matches``.

    Returns:
        How many rows were inserted.
    """
    table = DeltaTable.forPath(spark, path)
    before = delta_version(spark, path)
    if table.detail().select("numFiles").collect()[0][0] == 0:
        rows.write.format("delta").mode("append").save(path)
    else:
        table.alias("t").merge(rows.alias("n"), matches).whenNotMatchedInsertAll().execute()
    return inserted_rows(table, after=before)


def inserted_rows(table: DeltaTable, after: int | None) -> int:
    """Rows the inserts (MERGEs or appends) committed after version ``after`` added.

    A MERGE that matched every row commits nothing, so no commit after ``after`` means 0.
    """
    since = F.lit(True) if after is None else F.col("version") > after
    commits = (
        table.history(20)
        .where(F.col("operation").isin(*INSERTED) & since)
        .select("operation", "operationMetrics")
        .collect()
    )
    return sum(int((c["operationMetrics"] or {}).get(INSERTED[c["operation"]], 0)) for c in commits)
