"""A lane's log stops growing with its micro-batches: small files merged, old files deleted."""

from __future__ import annotations

import os
from datetime import timedelta

import pytest
from pyspark.testing import assertDataFrameEqual

from config.settings import with_sections
from lake.storage import local_path, table_size
from lake.tables import Tables
from speed_layer import lane_log
from speed_layer.epoch import Epoch
from speed_layer.lane import open_lane
from speed_layer.maintenance import maintain
from views import default_registry

pytestmark = pytest.mark.integration
EPOCH = Epoch(id="initial", cutoff={}, base=lambda view: None, keeps_history=False)


def _data_files(root: str) -> int:
    """Parquet files under a table's directory (its log left out), counted by the test."""
    return sum(
        name.endswith(".parquet")
        for folder, _, names in os.walk(local_path(root) or root)
        if "_delta_log" not in folder
        for name in names
    )


def _micro_batches(spark, settings, lane, count: int) -> None:
    """``count`` commits as a micro-batch makes them: a progress row, now and then a late one."""
    for i in range(count):
        pieces = [lane_log.rows(lane_log.PROGRESS, spark.range(i, i + 1).toDF("batch_id"))]
        if i % 2:
            late = spark.createDataFrame([(f"e{i}", "cart_state")], "event_id string, view string")
            pieces.append(lane_log.rows(lane_log.LATE, late))
        lane_log.commit(
            spark, lane, pieces, created_with=lane_log.properties(settings.stream.log_retention)
        )


def test_a_new_lane_log_keeps_its_past_for_the_configured_retention(spark, base_settings, tmp_path):
    settings = with_sections(
        base_settings,
        storage={"root": str(tmp_path)},
        stream={"log_retention": timedelta(minutes=90)},
    )
    lane = open_lane(spark, Tables.of(settings), "lambda-speed")
    _micro_batches(spark, settings, lane, 1)

    properties = {
        r.key: r.value for r in spark.sql(f"SHOW TBLPROPERTIES delta.`{lane.log}`").collect()
    }

    assert properties["delta.logRetentionDuration"] == "interval 5400 seconds"
    assert properties["delta.deletedFileRetentionDuration"] == "interval 5400 seconds"


def test_a_tidy_up_merges_the_small_files_and_deletes_the_replaced_ones(
    spark, base_settings, tmp_path
):
    settings = with_sections(
        base_settings,
        storage={"root": str(tmp_path)},
        stream={"log_retention": timedelta(0), "tidy_every": 12, "compact_every": 1000},
    )
    lane = open_lane(spark, Tables.of(settings), "lambda-speed")
    _micro_batches(spark, settings, lane, 12)
    progress_before = lane_log.read(spark, lane, lane_log.PROGRESS).collect()
    late_before = lane_log.read(spark, lane, lane_log.LATE).collect()
    assert _data_files(lane.log) == 18  # 12 progress files, 6 late ones

    maintain(spark, settings, lane, default_registry(), EPOCH, 12, clock=None)

    assert _data_files(lane.log) == 2  # one file per part, the replaced ones deleted
    assertDataFrameEqual(lane_log.read(spark, lane, lane_log.PROGRESS), progress_before)
    assertDataFrameEqual(lane_log.read(spark, lane, lane_log.LATE), late_before)
    size = table_size(spark, lane.log)
    assert size is not None
    assert size["files"] == 2
    assert size["stored_files"] - size["log_files"] == 2


def test_no_tidy_up_between_its_turns(spark, base_settings, tmp_path):
    settings = with_sections(
        base_settings,
        storage={"root": str(tmp_path)},
        stream={"log_retention": timedelta(0), "tidy_every": 12, "compact_every": 1000},
    )
    lane = open_lane(spark, Tables.of(settings), "lambda-speed")
    _micro_batches(spark, settings, lane, 12)

    maintain(spark, settings, lane, default_registry(), EPOCH, 11, clock=None)

    assert _data_files(lane.log) == 18
