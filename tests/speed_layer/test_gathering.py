"""Retained events are gathered in one file per ten minutes of their time: same rows, fewer files.

Every view allows ten minutes of lateness here (the default), so at a clock of 12:00
the steps that end by 11:50 are closed.
"""

from __future__ import annotations

from datetime import datetime

import pytest
from delta.tables import DeltaTable
from pyspark.sql import functions as F
from pyspark.testing import assertDataFrameEqual

from config.settings import with_sections
from lake import storage
from lake.tables import Tables
from speed_layer import lane_log
from speed_layer.epoch import Epoch
from speed_layer.lane import open_lane
from speed_layer.maintenance import PRUNE_EVERY, Upkeep, maintain
from views import default_registry
from views.registry import ViewRegistry

pytestmark = pytest.mark.integration
EPOCH = Epoch(id="kappa", cutoff={}, base=lambda view: None, keeps_history=False)
SCHEMA = "event_id string, partition int, offset long, event_time timestamp"


def _retain(spark, lane, tag: str, *times: str) -> None:
    """One micro-batch's retained events, at ``times`` (``HH:MM`` on 2026-11-25)."""
    rows = [
        (f"{tag}-{i}", 0, i, datetime.fromisoformat(f"2026-11-25T{at}"))
        for i, at in enumerate(times)
    ]
    frame = spark.createDataFrame(rows, SCHEMA)
    lane_log.commit(
        spark, lane, [lane_log.rows(lane_log.RETAINED, frame)], indexed=("retained.event_time",)
    )


def _files_per_step(spark, lane) -> dict[str, int]:
    """Step start (``HH:MM``) -> files holding the retained events of that step."""
    log = spark.read.format("delta").load(lane.log)
    events = log.where(F.col(lane_log.PART) == lane_log.RETAINED).select(
        F.date_format(F.date_trunc("hour", "retained.event_time"), "HH").alias("hour"),
        (F.minute("retained.event_time") / 10).cast("int").alias("tens"),
        F.col("_metadata.file_path").alias("file"),
    )
    counted = events.groupBy("hour", "tens").agg(F.countDistinct("file").alias("files"))
    return {f"{r.hour}:{r.tens}0": r.files for r in counted.collect()}


def _notes(spark, lane, since: int) -> list[str | None]:
    """The ``userMetadata`` of the commits after version ``since``, oldest first."""
    history = DeltaTable.forPath(spark, lane.log).history().where(F.col("version") > since)
    return [r.userMetadata for r in history.orderBy("version").collect()]


def test_closed_steps_are_gathered_once_and_the_rows_stay_the_same(spark, base_settings, tmp_path):
    settings = with_sections(
        base_settings, storage={"root": str(tmp_path)}, stream={"compact_every": 7}
    )
    registry = default_registry()
    lane = open_lane(spark, Tables.of(settings), "kappa-v1")
    _retain(spark, lane, "a", "11:21", "11:25")
    _retain(spark, lane, "b", "11:29", "11:31")
    _retain(spark, lane, "c", "11:35", "11:38")
    _retain(spark, lane, "d", "11:52", "11:55")

    # clock 11:45: only 11:20-11:30 is closed, and a process's first gathering takes the
    # last closed step alone
    done = maintain(
        spark, settings, lane, registry, EPOCH, PRUNE_EVERY, datetime(2026, 11, 25, 11, 45)
    )
    assert done == Upkeep(gathered=datetime(2026, 11, 25, 11, 30))
    assert _files_per_step(spark, lane) == {"11:20": 1, "11:30": 2, "11:50": 1}

    _retain(spark, lane, "late", "11:22")  # arrives after its step was gathered
    before = lane_log.read(spark, lane, lane_log.RETAINED).collect()
    version = lane_log.version(spark, lane)
    assert version is not None

    # clock 12:00: 11:30-11:40 is gathered; 11:40-11:50 holds nothing, so no commit
    done = maintain(
        spark, settings, lane, registry, EPOCH, 2 * PRUNE_EVERY, datetime(2026, 11, 25, 12, 0), done
    )
    assert done == Upkeep(gathered=datetime(2026, 11, 25, 11, 50))
    assert _files_per_step(spark, lane) == {"11:20": 2, "11:30": 1, "11:50": 1}
    assert _notes(spark, lane, version) == [storage.SAME_ANSWERS]
    after = lane_log.read(spark, lane, lane_log.RETAINED)
    assertDataFrameEqual(after, before)
    assert after.count() == 9


def test_with_no_view_that_joins_nothing_is_gathered(spark, base_settings, tmp_path):
    settings = with_sections(
        base_settings, storage={"root": str(tmp_path)}, stream={"compact_every": 7}
    )
    alone = ViewRegistry([v for v in default_registry() if v.context_lookback is None])
    lane = open_lane(spark, Tables.of(settings), "kappa-v1")
    _retain(spark, lane, "a", "11:21")
    _retain(spark, lane, "b", "11:25")
    version = lane_log.version(spark, lane)

    # at 11:40, 11:20-11:30 is closed (a join would gather it) and nothing is old enough to prune
    done = maintain(
        spark, settings, lane, alone, EPOCH, PRUNE_EVERY, datetime(2026, 11, 25, 11, 40)
    )
    assert done == Upkeep()
    assert lane_log.version(spark, lane) == version
    assert _files_per_step(spark, lane) == {"11:20": 2}
