"""The lane's log as Delta stores it: one commit per call, statistics where reads filter."""

from __future__ import annotations

from datetime import datetime

import pytest
from pyspark.sql import functions as F

from lake.tables import Tables
from speed_layer import lane_log
from speed_layer.lane import open_lane
from tests.support.delta import files_added_per_part, files_in_commit

pytestmark = pytest.mark.integration
INDEXED = (f"{lane_log.RETAINED}.event_time",)


def _lane(spark, base_settings, tmp_path):
    settings = base_settings.model_copy(
        update={"storage": base_settings.storage.model_copy(update={"root": str(tmp_path)})}
    )
    return open_lane(spark, Tables.of(settings), "lambda-speed")


def _retain(spark, lane, day: int) -> None:
    """Three events of ``day`` retained, after a view state as wide as the real views'."""
    frame = spark.createDataFrame(
        [(f"e{day}-{i}", datetime(2026, 11, day, 12)) for i in range(3)],
        "event_id string, event_time timestamp",
    )
    state = spark.range(1).select(*[F.lit(i).alias(f"c{i}") for i in range(40)])
    pieces = [
        lane_log.state_rows("initial", "wide", state),
        lane_log.rows(lane_log.RETAINED, frame),
    ]
    lane_log.commit(spark, lane, pieces, indexed=INDEXED)


def test_a_look_back_on_retained_events_skips_the_older_files(spark, base_settings, tmp_path):
    lane = _lane(spark, base_settings, tmp_path)
    _retain(spark, lane, 1)
    everything = lane_log.read(spark, lane, lane_log.RETAINED).inputFiles()
    _retain(spark, lane, 2)

    retained = lane_log.read(spark, lane, lane_log.RETAINED)
    recent = retained.where(F.col("event_time") >= F.lit(datetime(2026, 11, 2)))

    assert recent.count() == 3
    assert set(recent.inputFiles()).isdisjoint(everything)  # day 1's files were skipped
    assert len(retained.inputFiles()) > len(recent.inputFiles())


def test_the_log_keeps_statistics_only_where_reads_filter(spark, base_settings, tmp_path):
    lane = _lane(spark, base_settings, tmp_path)
    _retain(spark, lane, 1)

    properties = dict(
        (r.key, r.value) for r in spark.sql(f"SHOW TBLPROPERTIES delta.`{lane.log}`").collect()
    )

    assert properties["delta.dataSkippingStatsColumns"] == "retained.event_time"


def test_a_log_created_without_the_indexed_column_is_created_all_the_same(
    spark, base_settings, tmp_path
):
    lane = _lane(spark, base_settings, tmp_path)
    frame = spark.createDataFrame([("bad json", "malformed")], "raw string, reason string")

    lane_log.commit(spark, lane, [lane_log.rows(lane_log.QUARANTINE, frame)], indexed=INDEXED)
    _retain(spark, lane, 1)

    assert lane_log.read(spark, lane, lane_log.QUARANTINE).count() == 1
    assert lane_log.read(spark, lane, lane_log.RETAINED).count() == 3


def test_a_commit_writes_one_file_per_part(spark, base_settings, tmp_path):
    lane = _lane(spark, base_settings, tmp_path)
    spread = spark.range(40).repartition(8).selectExpr("id", "id % 3 AS k")
    pieces = [
        lane_log.state_rows("initial", "a", spread),
        lane_log.state_rows("initial", "b", spread.groupBy("k").count()),
        lane_log.rows(lane_log.RETAINED, spread),
    ]

    lane_log.commit(spark, lane, pieces)

    assert files_added_per_part(spark, lane.log) == {
        "state/initial/a": 1,
        "state/initial/b": 1,
        lane_log.RETAINED: 1,
    }


def test_a_commit_shuffles_none_of_the_rows_it_writes(spark):
    spread = spark.range(0, 40, 1, 8).selectExpr("id", "id % 3 AS k")  # 8 partitions, no shuffle
    pieces = [lane_log.state_rows("initial", "a", spread), lane_log.rows(lane_log.RETAINED, spread)]

    plan = lane_log.one_frame(pieces)._jdf.queryExecution().executedPlan().toString()

    assert "Exchange" not in plan


def test_a_delete_rewrites_only_the_files_that_hold_rows_it_drops(spark, base_settings, tmp_path):
    lane = _lane(spark, base_settings, tmp_path)
    for day in (1, 2, 3):
        _retain(spark, lane, day)
    first_day = {f for f in files_in_commit(spark, lane.log, 0, "add") if "retained" in f}

    lane_log.delete(
        spark,
        lane,
        lane_log.RETAINED,
        F.col("retained.event_time") < F.lit(datetime(2026, 11, 2)),
    )

    left = lane_log.read(spark, lane, lane_log.RETAINED).select("event_id")
    assert sorted(r.event_id for r in left.collect()) == [
        "e2-0",
        "e2-1",
        "e2-2",
        "e3-0",
        "e3-1",
        "e3-2",
    ]
    assert files_in_commit(spark, lane.log, 3, "remove") == first_day
    assert files_in_commit(spark, lane.log, 3, "add") == set()  # nothing else to keep there


def test_a_delete_that_matches_no_row_makes_no_commit(spark, base_settings, tmp_path):
    lane = _lane(spark, base_settings, tmp_path)
    _retain(spark, lane, 2)

    lane_log.delete(
        spark,
        lane,
        lane_log.RETAINED,
        F.col("retained.event_time") < F.lit(datetime(2026, 11, 1)),
    )

    assert lane_log.version(spark, lane) == 0
    assert lane_log.read(spark, lane, lane_log.RETAINED).count() == 3
