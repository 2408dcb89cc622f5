"""A live lane runs its micro-batches in the scheduler's live pool; a catch-up does not."""

from __future__ import annotations

import pytest

from designs.lambda_arch import run_speed
from designs.platform import build
from lake.pools import LIVE
from tests.support.kafka import produce_spec
from tests.support.pools import last_stage, stage_pools
from workload.generator import WorkloadSpec

pytestmark = pytest.mark.integration
SPEC = WorkloadSpec(events=400, users=20, products=10, seed=58)


def test_a_live_lane_runs_in_the_live_pool_and_a_catch_up_in_the_default_one(spark, topic_settings):
    registry = build(topic_settings).registry
    produce_spec(topic_settings, SPEC, part=slice(0, 200))

    def stop_after_the_first(_progress: dict) -> None:
        for query in spark.streams.active:  # the lane's loop sees its query ended, and returns
            query.stop()

    before = last_stage(spark)
    live = run_speed(
        spark, topic_settings, registry, until_caught_up=False, on_progress=stop_after_the_first
    )
    assert live.micro_batches >= 1
    assert stage_pools(spark, before) == {LIVE}

    produce_spec(topic_settings, SPEC, part=slice(200, None))
    before = last_stage(spark)
    caught_up = run_speed(spark, topic_settings, registry, until_caught_up=True)
    assert caught_up.micro_batches >= 1
    assert stage_pools(spark, before) == {"default"}
