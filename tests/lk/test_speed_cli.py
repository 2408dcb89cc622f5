"""``lk speed --until-caught-up`` as the demo, the tests and the Airflow tasks run it."""

from __future__ import annotations

import pytest

from designs.lambda_arch import LAMBDA_LANE
from event_log.topics import end_offsets
from lake.tables import Tables
from speed_layer import progress
from speed_layer.lane import find_lane
from tests.support.env import lk_env, run_lk
from tests.support.kafka import produce_spec
from workload.generator import WorkloadSpec

pytestmark = pytest.mark.integration


def test_until_caught_up_stops_between_micro_batches_with_nothing_on_stderr(spark, topic_settings):
    settings = topic_settings
    produce_spec(settings, WorkloadSpec(events=900, users=20, products=10, seed=5))
    env = lk_env(settings, LK_STREAM__MAX_OFFSETS_PER_TRIGGER="400")

    done = run_lk("speed", "--until-caught-up", env=env)

    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stderr == ""  # no Py4J InterruptedException, no JVM line
    lane = find_lane(spark, Tables.of(settings), LAMBDA_LANE)
    assert lane is not None
    last = progress.latest(spark, lane)
    assert last is not None and last.batch_id >= 2  # 900 offsets, 400 a micro-batch
    assert last.end_offsets == end_offsets(settings, settings.kafka.events_topic)
    assert f"{LAMBDA_LANE}: " in done.stdout and " rows in " in done.stdout
