"""Per-micro-batch parameters enter plans as data, so Spark's generated code is reused."""

from __future__ import annotations

from datetime import datetime

import pytest
from pyspark.sql import Row
from pyspark.sql import functions as F
from pyspark.testing import assertDataFrameEqual

from lake.spark import codegen_compilations
from speed_layer.watermarks import late_for, parameters, watermark_column

pytestmark = pytest.mark.integration


def test_parameters_hold_the_batch_id_and_each_watermark(spark):
    moment = datetime(2026, 11, 22, 10, 30, 15, 250000)
    params = parameters(spark, 7, {"a": moment, "b`c": None})
    assert params.columns == ["batch_id", watermark_column("a"), watermark_column("b`c")]
    assertDataFrameEqual(params, [Row(7, moment, None)])


def test_a_plan_joined_with_new_parameters_compiles_no_new_code(spark):
    events = spark.range(1000).withColumn("event_time", F.timestamp_seconds("id"))

    def run(batch_id: int) -> int:
        """Events behind the watermark of a view whose name holds a dot."""
        params = parameters(spark, batch_id, {"v.1": datetime(1970, 1, 1, 0, batch_id)})
        flagged = events.crossJoin(F.broadcast(params)).select(late_for(["v.1"]).alias("late"))
        return flagged.where(F.size("late") > 0).count()

    assert run(1) == 60
    before = codegen_compilations(spark)
    assert [run(batch_id) for batch_id in (2, 3, 4)] == [120, 180, 240]
    assert codegen_compilations(spark) == before
