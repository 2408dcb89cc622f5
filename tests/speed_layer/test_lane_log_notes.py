"""A lane's commit says which micro-batch it holds, so when a micro-batch ended is on record."""

from __future__ import annotations

import time

import pytest

from lake.storage import commit_actions, delta_version
from lake.tables import Tables
from speed_layer import lane_log
from speed_layer.lane import Lane, open_lane

pytestmark = pytest.mark.integration


@pytest.fixture
def lane(spark, base_settings, tmp_path) -> Lane:
    """A new lane of its own, with no log yet."""
    settings = base_settings.model_copy(
        update={"storage": base_settings.storage.model_copy(update={"root": str(tmp_path)})}
    )
    return open_lane(spark, Tables.of(settings), "noted")


def test_a_commit_noted_with_its_micro_batch_reads_back_as_that_micro_batch(spark, lane):
    progress = lane_log.rows(lane_log.PROGRESS, spark.range(7, 8).toDF("batch_id"))
    lane_log.commit(spark, lane, [progress], note=lane_log.batch_note(7))
    lane_log.commit(spark, lane, [progress])

    notes = [
        action["commitInfo"].get("userMetadata")
        for version in (0, 1)
        for action in commit_actions(spark, lane.log, version)
        if "commitInfo" in action
    ]
    assert delta_version(spark, lane.log) == 1
    assert notes == ["micro-batch 7", None]
    assert [lane_log.noted_batch(note) for note in notes] == [7, None]
    assert lane_log.noted_batch("rebase onto epoch r1") is None


def test_a_micro_batch_is_committed_when_the_last_commit_noted_with_it_was_made(spark, lane):
    assert lane_log.batch_commits(spark, lane) == {}  # no log yet
    progress = lane_log.rows(lane_log.PROGRESS, spark.range(1).toDF("batch_id"))
    started = time.time()
    for note in (lane_log.batch_note(4), None, lane_log.batch_note(5), lane_log.batch_note(4)):
        lane_log.commit(spark, lane, [progress], note=note)  # batch 4 again: after a recovery
    ended = time.time()

    committed = lane_log.batch_commits(spark, lane)
    assert set(committed) == {4, 5}
    assert started - 1 <= committed[5] <= committed[4] <= ended + 1  # the later commit of 4
    assert lane_log.batch_commits(spark, lane, last=1) == {4: committed[4]}
