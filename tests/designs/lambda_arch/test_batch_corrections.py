"""Lambda's promise: the next batch run absorbs what the speed layer dropped as late, and
readers are served that run, whether or not new events arrive (issue 16, part 1)."""

from __future__ import annotations

import threading
from datetime import datetime, timedelta

import pytest

from batch_layer.job import run_batch
from config.settings import with_sections
from designs.lambda_arch import LAMBDA_LANE, run_speed
from designs.lambda_arch.source import watched_tables
from designs.platform import build
from lake.tables import Tables
from oracle import consume_all
from tests.support.expected import (
    assert_served_per_contract,
    lane_batches,
    late_counts,
)
from tests.support.kafka import produce_spec
from tests.support.serving import source_of
from workload.generator import WorkloadSpec, generate
from workload.producer import produce

pytestmark = pytest.mark.integration
HISTORY = WorkloadSpec(
    events=2_000,
    users=50,
    products=25,
    seed=7701,
    late_fraction=0.05,
    max_lateness=timedelta(minutes=120),
)
LIVE = WorkloadSpec(
    events=2_000,
    users=50,
    products=25,
    seed=7702,
    start=datetime(2026, 11, 1, 6),
    span=timedelta(minutes=180),
    late_fraction=0.15,
    max_lateness=timedelta(minutes=120),
)


@pytest.fixture
def settings(topic_settings):
    return with_sections(topic_settings, stream={"max_offsets_per_trigger": 300})


def _assert_serving_equals_oracle(spark, settings, run) -> None:
    assert_served_per_contract(spark, settings, LAMBDA_LANE, cutoff=run.cutoff)


# make scenarios, not CI: a batch correction served on a caught-up lane (165 s)
@pytest.mark.scenario
def test_a_new_run_is_served_on_a_caught_up_lane_with_no_new_events(spark, settings):
    produce_spec(settings, HISTORY)
    run_batch(spark, settings, build(settings).registry)
    produce_spec(settings, LIVE)
    run_speed(spark, settings, build(settings).registry, until_caught_up=True)
    events = consume_all(settings, settings.kafka.events_topic)
    late = late_counts(events, settings, lane_batches(spark, settings, LAMBDA_LANE))
    assert all(late.values()), f"the live workload has late events for every view: {late}"

    second = run_batch(spark, settings, build(settings).registry).run
    source = source_of(spark, settings)
    assert source.description == f"batch run {second.run_id}", (
        "the run covers everything the lane read: it alone is served at once"
    )
    tables = Tables.of(settings)
    assert source.watched == watched_tables(tables), "the lane's rebase will move it"
    _assert_serving_equals_oracle(spark, settings, second)

    run_speed(
        spark, settings, build(settings).registry, until_caught_up=True
    )  # no new events: the lane rebases
    source = source_of(spark, settings)
    assert source.description == f"batch run {second.run_id} + speed layer"
    assert source.watched == (tables.batch_runs,), "settled: only a new run can move it"
    _assert_serving_equals_oracle(spark, settings, second)


@pytest.mark.scenario
def test_a_new_run_is_served_while_events_keep_arriving(spark, settings):
    produce_spec(settings, HISTORY)
    run_batch(spark, settings, build(settings).registry)
    live = list(generate(LIVE))
    produce(settings, [r for r in live if r.topic == "catalog"])
    events = [r for r in live if r.topic == "events"]
    first, during, after = events[:500], events[500:900], events[900:]
    produce(settings, first)

    failed: list[BaseException] = []

    def lane_run() -> None:
        try:
            run_speed(spark, settings, build(settings).registry, until_caught_up=True)
        except BaseException as error:  # raised on the test's thread below
            failed.append(error)

    lane = threading.Thread(target=lane_run)
    lane.start()
    produce(settings, during)
    second = run_batch(
        spark, settings, build(settings).registry
    ).run  # cutoff somewhere inside what the lane reads
    produce(settings, after)
    lane.join()
    assert not failed, f"the lane running beside the batch run failed: {failed}"
    run_speed(spark, settings, build(settings).registry, until_caught_up=True)

    source = source_of(spark, settings)
    assert source.description == f"batch run {second.run_id} + speed layer"
    batches = lane_batches(spark, settings, LAMBDA_LANE)
    assert any(b.cutoff == second.cutoff for b in batches), "micro-batches ran on the new run"
    _assert_serving_equals_oracle(spark, settings, second)
