"""One-row tables written as SQL ``VALUES``: held by the JVM, no Python worker, no new code.

``spark.createDataFrame`` ships local rows through a Python RDD, so every job that reads
them starts Python workers; literal numbers and timestamps in a plan become literals in
Spark's generated code, compiled again whenever they change. An inline ``VALUES`` table
is a local relation: its values are evaluated once, when the plan is analysed, and never
reach generated code. What changes every micro-batch enters the plans this way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime

from pyspark.sql import DataFrame, SparkSession


def quoted(name: str) -> str:
    """``name`` as a quoted identifier (names may hold dots or backticks)."""
    return "`" + name.replace("`", "``") + "`"


def literal(value: object, sql_type: str) -> str:
    """``value`` as a SQL literal of ``sql_type`` (naive datetimes are UTC)."""
    if value is None:
        return f"CAST(NULL AS {sql_type})"
    if isinstance(value, list | tuple):
        element = sql_type.strip()[len("array<") : -1]
        return f"CAST(ARRAY({', '.join(literal(v, element) for v in value)}) AS {sql_type})"
    if isinstance(value, datetime):
        aware = value if value.tzinfo else value.replace(tzinfo=UTC)
        return f"TIMESTAMP '{aware.isoformat(sep=' ')}'"
    if isinstance(value, str):
        escaped = value.replace("\\", "\\\\").replace("'", "\\'")
        return f"CAST('{escaped}' AS {sql_type})"
    return f"CAST({value!r} AS {sql_type})"


def one_row(spark: SparkSession, columns: dict[str, tuple[object, str]]) -> DataFrame:
    """A one-row table: column name -> (value, SQL type)."""
    values = ", ".join(literal(value, sql_type) for value, sql_type in columns.values())
    names = ", ".join(map(quoted, columns))
    return spark.sql(f"SELECT * FROM VALUES ({values}) AS row({names})")


def row_of(spark: SparkSession, columns: Mapping[str, str], values: Sequence[object]) -> DataFrame:
    """A one-row table of ``values``, in the order of ``columns`` (name -> SQL type).

    For a row appended to a Delta table (a run published, a pointer switched): Delta
    stores the columns as nullable whatever the row says, and no Python worker starts.
    """
    pairs = zip(columns.items(), values, strict=True)
    return one_row(spark, {name: (value, sql_type) for (name, sql_type), value in pairs})
