"""Pruning the retained events: what a rebase or a join can still need stays, the rest goes."""

from __future__ import annotations

from datetime import datetime

import pytest

from config.settings import with_sections
from lake.tables import Tables
from speed_layer import lane_log
from speed_layer.epoch import Epoch
from speed_layer.lane import open_lane
from speed_layer.maintenance import PRUNE_EVERY, maintain
from views import default_registry

pytestmark = pytest.mark.integration
CLOCK = datetime(2026, 11, 25, 12, 0)  # the keep-back (75 minutes by default) ends at 10:45
RETAINED = [
    ("old-batch-owned", 0, 5, datetime(2026, 11, 25, 9, 0)),  # below the cutoff, and old
    ("old-lane-owned", 0, 15, datetime(2026, 11, 25, 9, 0)),  # at the cutoff or after it
    ("recent", 0, 6, datetime(2026, 11, 25, 11, 59)),  # within the keep-back
]


def _pruned(spark, base_settings, tmp_path, epoch: Epoch) -> list[str]:
    """The retained event ids left after the maintenance of a micro-batch that prunes."""
    settings = with_sections(
        base_settings, storage={"root": str(tmp_path)}, stream={"compact_every": 7}
    )
    lane = open_lane(spark, Tables.of(settings), "lambda-speed")
    frame = spark.createDataFrame(
        RETAINED, "event_id string, partition int, offset long, event_time timestamp"
    )
    lane_log.commit(spark, lane, [lane_log.rows(lane_log.RETAINED, frame)])
    maintain(spark, settings, lane, default_registry(), epoch, PRUNE_EVERY, CLOCK)

    left = lane_log.read(spark, lane, lane_log.RETAINED).collect()
    return sorted(row.event_id for row in left)


def test_lambda_keeps_old_events_the_batch_layer_does_not_own_yet(spark, base_settings, tmp_path):
    epoch = Epoch(id="run-1", cutoff={0: 10}, base=lambda view: None, keeps_history=True)
    assert _pruned(spark, base_settings, tmp_path, epoch) == ["old-lane-owned", "recent"]


def test_kappa_keeps_only_what_a_join_can_still_reach(spark, base_settings, tmp_path):
    epoch = Epoch(id="kappa", cutoff={}, base=lambda view: None, keeps_history=False)
    assert _pruned(spark, base_settings, tmp_path, epoch) == ["recent"]
