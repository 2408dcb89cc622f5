"""The compaction: the state merged, and its micro-batches' retained events in one file."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from lk.config import with_sections
from lk.tables import Tables
from speed_layer import lane_log
from speed_layer.lane import open_lane
from speed_layer.micro_batch import Epoch, MicroBatchProcessor
from tests.support.delta import files_in_commit
from tests.support.serving import passthrough_view
from views.registry import ViewRegistry

pytestmark = pytest.mark.integration
EPOCH = Epoch(id="run-1", cutoff={}, base=lambda view: None, keeps_history=True)
START = datetime(2026, 11, 25, 12, 0)


def _retained_files(spark, lane, version: int, action: str) -> set[str]:
    return {f for f in files_in_commit(spark, lane.log, version, action) if "retained" in f}


def test_a_compaction_writes_its_micro_batches_retained_events_as_one_file(
    spark, base_settings, tmp_path
):
    settings = with_sections(
        base_settings, storage={"root": str(tmp_path)}, stream={"compact_every": 5}
    )
    lane = open_lane(spark, Tables.of(settings), "lambda-speed")
    registry = ViewRegistry([passthrough_view("ids")])
    processor = MicroBatchProcessor(spark, settings, lane, registry, lambda: EPOCH)
    for batch_id in range(6):  # micro-batches 0-5, a commit (version) each
        events = spark.createDataFrame(
            [(f"b{batch_id}-{i}", START + timedelta(seconds=batch_id), batch_id) for i in range(3)],
            "event_id string, event_time timestamp, batch_id long",
        )
        state = spark.createDataFrame([(batch_id,)], "id long")
        pieces = [
            lane_log.state_rows(EPOCH.id, "ids", state),
            lane_log.rows(lane_log.RETAINED, events),
        ]
        lane_log.commit(spark, lane, pieces, indexed=processor.indexed)

    processor._maintain(EPOCH, 5, START + timedelta(seconds=5))

    retained = lane_log.read(spark, lane, lane_log.RETAINED)
    assert sorted(r.event_id for r in retained.collect()) == sorted(
        f"b{b}-{i}" for b in range(6) for i in range(3)
    )
    compacted = set().union(*(_retained_files(spark, lane, v, "add") for v in range(1, 6)))
    assert _retained_files(spark, lane, 6, "remove") == compacted  # micro-batches 1-5
    assert len(_retained_files(spark, lane, 6, "add")) == 1
    assert len(retained.inputFiles()) == 2  # micro-batch 0's file and the compacted one
    state = lane_log.state_table(lane, EPOCH.id, "ids").read(spark)
    assert sorted(r.id for r in state.collect()) == list(range(6))
