"""One-row tables as SQL VALUES: every value round-trips, and the JVM holds the row."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pyspark.sql import Row
from pyspark.testing import assertDataFrameEqual

from lake.inline import one_row, row_of

pytestmark = pytest.mark.integration
AWKWARD = """it's a "quote", a back\\slash, a \\' and {"json": [1]}"""


def test_every_value_comes_back_as_it_went_in(spark):
    row = one_row(
        spark,
        {
            "text": (AWKWARD, "string"),
            "count": (2**40, "bigint"),
            "at": (datetime(2026, 11, 24, 12, 30, 1, 250000), "timestamp"),
            "aware": (datetime(2026, 11, 24, 12, 30, tzinfo=UTC), "timestamp"),
            "nothing": (None, "timestamp"),
            "odd.name`": ("x", "string"),
        },
    )

    assert row.dtypes == [
        ("text", "string"),
        ("count", "bigint"),
        ("at", "timestamp"),
        ("aware", "timestamp"),
        ("nothing", "timestamp"),
        ("odd.name`", "string"),
    ]
    expected = Row(
        AWKWARD,
        2**40,
        datetime(2026, 11, 24, 12, 30, 1, 250000),
        datetime(2026, 11, 24, 12, 30),
        None,
        "x",
    )
    assertDataFrameEqual(row, [expected])


def test_the_row_is_a_local_table_not_a_python_rdd(spark):
    row = one_row(spark, {"n": (1, "bigint")})

    plan = row._jdf.queryExecution().executedPlan().toString()
    assert "LocalTableScan" in plan
    assert "ExistingRDD" not in plan


def test_a_row_of_named_columns_with_a_list_appends_to_delta_as_nullable(spark, tmp_path):
    columns = {"id": "string", "views": "array<string>", "none": "array<string>", "n": "bigint"}
    path = str(tmp_path / "runs")

    row_of(spark, columns, ("a", ["x", "it's"], [], 3)).write.format("delta").save(path)
    row_of(spark, columns, ("b", None, ["y"], None)).write.format("delta").mode("append").save(path)

    table = spark.read.format("delta").load(path)
    assert [f.nullable for f in table.schema.fields] == [True] * 4
    assertDataFrameEqual(
        table, [Row("a", ["x", "it's"], [], 3), Row("b", None, ["y"], None)], checkRowOrder=False
    )


def test_a_row_of_needs_a_value_for_every_column(spark):
    with pytest.raises(ValueError):
        row_of(spark, {"a": "int", "b": "int"}, (1,))
