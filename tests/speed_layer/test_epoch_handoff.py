"""Who opens a new batch run's epoch: the micro-batch that reads the next events, or a rebase.

A rebase between micro-batches is one pass over every view; a micro-batch that opens the
epoch computes its own events in that same pass. So a lane rebases only on a quiet topic
(nothing unread), where no micro-batch is coming; either way readers get the oracle's rows.
"""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

import oracle
from batch_layer.job import run_batch
from designs.lambda_arch import LAMBDA_LANE, lambda_epoch, run_speed
from designs.platform import build
from lake.tables import Tables
from oracle import consume_all
from speed_layer import progress
from speed_layer.lane import find_lane
from speed_layer.micro_batch import MicroBatchProcessor
from tests.support.expected import assert_served_per_contract
from tests.support.kafka import produce_spec, small_spec

pytestmark = pytest.mark.integration
SPAN = timedelta(minutes=30)


def _kinds(spark, settings, epoch: str) -> list[str]:
    lane = find_lane(spark, Tables.of(settings), LAMBDA_LANE)
    assert lane is not None
    return [row.kind for row in progress.history(spark, lane) if row.epoch == epoch]


def test_a_new_epoch_is_opened_by_the_next_micro_batch_and_a_quiet_lane_rebases(
    spark, topic_settings
):
    settings = topic_settings
    registry = build(settings).registry
    produce_spec(settings, small_spec(51, datetime(2026, 11, 1, 8), SPAN))
    run_speed(spark, settings, registry, until_caught_up=True)

    second = run_batch(spark, settings, registry).run
    joined = oracle.catalog_state(consume_all(settings, settings.kafka.catalog_topic))
    # unread, and a new catalog
    produce_spec(settings, small_spec(52, datetime(2026, 11, 1, 9), SPAN))
    lane = find_lane(spark, Tables.of(settings), LAMBDA_LANE)
    assert lane is not None
    processor = MicroBatchProcessor(spark, settings, lane, registry, lambda_epoch(spark, settings))
    try:
        assert not processor.follow_epoch(), "events wait: their micro-batch opens the epoch"
    finally:
        processor.close()
    run_speed(spark, settings, registry, until_caught_up=True)
    assert _kinds(spark, settings, second.run_id) == [progress.MICRO_BATCH]
    assert_served_per_contract(
        spark, settings, LAMBDA_LANE, cutoff=second.cutoff, batch_catalog=joined
    )

    third = run_batch(spark, settings, registry).run  # and nothing new after it
    run_speed(spark, settings, registry, until_caught_up=True)
    assert _kinds(spark, settings, third.run_id) == [progress.REBASE]
    assert_served_per_contract(spark, settings, LAMBDA_LANE, cutoff=third.cutoff)
