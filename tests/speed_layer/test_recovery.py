"""Crash recovery of an uncommitted micro-batch, on a lane set up by hand."""

from __future__ import annotations

import pytest
from pyspark.sql import Row
from pyspark.testing import assertDataFrameEqual

from lake import storage
from lake.tables import Tables
from speed_layer import lane_log
from speed_layer.lane import open_lane
from speed_layer.recovery import marker, record_version, recover

pytestmark = pytest.mark.integration


def _commit(spark, lane, ids: list[int]) -> None:
    frame = spark.createDataFrame([(i,) for i in ids], "id long")
    lane_log.commit(spark, lane, [lane_log.rows(lane_log.RETAINED, frame)])


def _lane(spark, base_settings, tmp_path):
    settings = base_settings.model_copy(
        update={"storage": base_settings.storage.model_copy(update={"root": str(tmp_path)})}
    )
    return open_lane(spark, Tables.of(settings), "lambda-speed"), Tables.of(settings)


def test_recovery_restores_the_log_to_before_the_uncommitted_micro_batch(
    spark, base_settings, tmp_path
):
    lane, tables = _lane(spark, base_settings, tmp_path)
    _commit(spark, lane, [1, 2])  # micro-batch 2, committed by Spark
    storage.write_text(spark, f"{lane.checkpoint}/commits/2", "v1")
    storage.write_text(spark, f"{lane.checkpoint}/offsets/3", "v1")  # planned, never committed
    assert record_version(spark, lane, 3) == 0
    _commit(spark, lane, [3])  # micro-batch 3's one commit landed, then the process died

    recovered = recover(spark, lane)

    assert recovered.recoveries == lane.recoveries + 1
    assert open_lane(spark, tables, "lambda-speed").recoveries == recovered.recoveries
    assert not storage.exists(spark, f"{lane.checkpoint}/offsets/3")
    assert not storage.exists(spark, marker(lane, 3))
    assert storage.exists(spark, f"{lane.checkpoint}/commits/2")
    assertDataFrameEqual(lane_log.read(spark, lane, lane_log.RETAINED), [Row(id=1), Row(id=2)])
    assert recover(spark, recovered) == recovered, "nothing left to undo"


def test_recovery_of_a_first_micro_batch_deletes_the_log_state_store_and_partial_commit(
    spark, base_settings, tmp_path
):
    lane, _ = _lane(spark, base_settings, tmp_path)
    storage.write_text(spark, f"{lane.checkpoint}/offsets/0", "v1")
    storage.write_text(spark, f"{lane.checkpoint}/state/0/0/1.zip", "state of batch 0")
    # the commit of batch 0 was being written when the kill came (seen in a chaos run)
    storage.write_text(spark, f"{lane.checkpoint}/commits/.0.2f1c.tmp", "")
    assert record_version(spark, lane, 0) is None
    _commit(spark, lane, [1])

    recover(spark, lane)

    assert lane_log.version(spark, lane) is None
    assert not storage.exists(spark, f"{lane.checkpoint}/state")
    assert not storage.exists(spark, f"{lane.checkpoint}/commits")
    assert not storage.exists(spark, f"{lane.checkpoint}/offsets/0")
