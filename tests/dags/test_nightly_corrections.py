"""Issue 16 through Airflow: after ``lambda_nightly`` succeeds, a caught-up lane serves the
new run, with the late events the speed layer had to drop now absorbed."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from batch_layer import runs
from batch_layer.job import run_batch
from config.settings import with_sections
from designs.lambda_arch import LAMBDA_LANE, run_speed
from designs.platform import build
from lake.tables import Tables
from oracle import consume_all
from tests.dags.conftest import DAGS
from tests.support.env import lk_env
from tests.support.expected import (
    assert_served_per_contract,
    lane_batches,
    late_counts,
)
from tests.support.kafka import produce_spec
from tests.support.serving import source_of
from workload.generator import WorkloadSpec

pytestmark = [pytest.mark.integration, pytest.mark.scenario]  # minutes: make scenarios
HISTORY = WorkloadSpec(
    events=800, users=30, products=20, seed=7711, late_fraction=0.05,
    max_lateness=timedelta(minutes=120),
)  # fmt: skip
LIVE = WorkloadSpec(
    events=1_000, users=30, products=20, seed=7712, start=datetime(2026, 11, 1, 6),
    span=timedelta(minutes=180), late_fraction=0.15, max_lateness=timedelta(minutes=120),
)  # fmt: skip


def test_the_nightly_run_serves_the_batch_corrections(spark, topic_settings, airflow_home, use_env):
    from airflow.dag_processing.dagbag import DagBag

    settings = with_sections(topic_settings, stream={"max_offsets_per_trigger": 400})
    use_env(lk_env(settings, LK_MODE="lambda", LK_STREAM__MAX_OFFSETS_PER_TRIGGER="400"))
    produce_spec(settings, HISTORY)
    run_batch(spark, settings, build(settings).registry)
    produce_spec(settings, LIVE)
    run_speed(spark, settings, build(settings).registry, until_caught_up=True)
    events = consume_all(settings, settings.kafka.events_topic)
    assert any(late_counts(events, settings, lane_batches(spark, settings, LAMBDA_LANE)).values())

    run = DagBag(dag_folder=str(DAGS)).get_dag("lambda_nightly").test()
    assert run.state == "success"
    newest = runs.latest_published(spark, Tables.of(settings))
    assert source_of(spark, settings).description == f"batch run {newest.run_id} + speed layer"
    assert_served_per_contract(spark, settings, LAMBDA_LANE, cutoff=newest.cutoff)
