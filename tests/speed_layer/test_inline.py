"""One-row tables as SQL VALUES: every value round-trips, and the JVM holds the row."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pyspark.sql import Row
from pyspark.testing import assertDataFrameEqual

from speed_layer.inline import one_row

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
