"""A join's context part: each compaction keeps only what the join can still meet."""

from __future__ import annotations

from datetime import timedelta

import pytest
from pyspark.sql import Row
from pyspark.sql import functions as F
from pyspark.testing import assertDataFrameEqual

from config.settings import with_sections
from lake import storage
from lake.tables import Tables
from speed_layer import lane_log
from speed_layer.epoch import Epoch
from speed_layer.lane import open_lane
from speed_layer.maintenance import compact, contexts
from tests.views.conftest import T0, make_events
from views import conversions
from views.registry import ViewRegistry

pytestmark = pytest.mark.integration
EPOCH = Epoch(id="kappa", cutoff={}, base=lambda view: None, keeps_history=False)
REGISTRY = ViewRegistry([conversions.VIEW])
H, M = timedelta(hours=1), timedelta(minutes=1)
CLOCK = T0 + 3 * H  # lateness 10 min: the watermark at 2 h 50; keep-back 75 min: 1 h 45


def _micro_batch(spark, lane, rows: list[tuple], late: bool = False) -> None:
    """Retained rows of one micro-batch into the context part, as a lane appends them."""
    frame = make_events(spark, rows).select(
        "*",
        F.array(*([F.lit("conversions")] if late else [])).cast("array<string>").alias("late_for"),
        F.lit(1).cast("long").alias("batch_id"),
    )
    lane_log.commit(spark, lane, [lane_log.context_rows("conversions", frame)])


def test_a_compaction_keeps_of_a_joins_context_what_it_can_still_meet(
    spark, base_settings, tmp_path
):
    settings = with_sections(base_settings, storage={"root": str(tmp_path)})
    lane = open_lane(spark, Tables.of(settings), "kappa-v1")
    view = ("page_view", 1, 10, None, None)
    _micro_batch(spark, lane, [(*view, T0 + 90 * M), (*view, T0 + 125 * M), (*view, T0 + 140 * M)])
    _micro_batch(
        spark,
        lane,
        [
            (*view, T0 + 160 * M),
            (*view, T0 + 175 * M),
            ("purchase", 1, 10, 1, 1.0, T0 + 165 * M),  # before the watermark: met by none
            ("purchase", 2, 10, 1, 1.0, T0 + 172 * M),
        ],
    )
    late = [
        ("page_view", 2, 10, None, None, T0 + 130 * M),
        ("page_view", 2, 10, None, None, T0 + 131 * M),
    ]
    _micro_batch(spark, lane, late, late=True)

    version = compact(
        spark, lane, REGISTRY, EPOCH, None, contexts(spark, settings, lane, REGISTRY, CLOCK)
    )

    assert version is not None
    note = next(
        a["commitInfo"]
        for a in storage.commit_actions(spark, lane.log, version)
        if "commitInfo" in a
    )
    assert note.get("userMetadata") == storage.SAME_ANSWERS
    kept = lane_log.read(spark, lane, lane_log.context_part("conversions"), column=lane_log.CONTEXT)
    assert kept is not None
    assertDataFrameEqual(
        kept.select("event_type", "user_id", "event_time", F.size("late_for").alias("late")),
        [
            Row(
                "page_view", 1, T0 + 125 * M, 0
            ),  # the hour's first (the one at 1 h 30 is past the keep-back)
            Row("page_view", 1, T0 + 175 * M, 0),  # and last
            Row("purchase", 2, T0 + 172 * M, 0),
            Row("page_view", 2, T0 + 130 * M, 1),  # late: each kept whole
            Row("page_view", 2, T0 + 131 * M, 1),
        ],
    )
