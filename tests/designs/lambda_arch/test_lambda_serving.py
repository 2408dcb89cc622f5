"""Lambda end to end on a real broker: batch, more events (some late), speed; serving = oracle."""

from __future__ import annotations

import pytest

import oracle
from batch_layer.job import run_batch
from config.settings import with_sections
from designs.lambda_arch import LAMBDA_LANE, run_speed
from designs.platform import build
from designs.status import lane_status
from oracle import consume_all
from tests.support.cache import cached_rdds
from tests.support.expected import (
    assert_served_per_contract,
    lane_batches,
    late_counts,
)
from tests.support.serving import read_served, source_of
from workload.generator import WorkloadSpec, generate
from workload.producer import produce

pytestmark = pytest.mark.integration
SPEC = WorkloadSpec(events=2_500, users=60, products=30, seed=21)


def test_serving_equals_oracle_after_batch_then_speed(spark, topic_settings):
    # several micro-batches, so the lane has an event-time clock and late events
    settings = with_sections(topic_settings, stream={"max_offsets_per_trigger": 500})
    records = list(generate(SPEC))
    split = int(len(records) * 0.6)
    assert produce(settings, records[:split]).failed == 0
    cached = cached_rdds(spark)
    batch = run_batch(spark, settings, build(settings).registry)
    # the batch job released its events and catalog (what earlier tests left may have been
    # collected since: Spark's cleaner unpersists an RDD once nothing refers to it)
    assert cached_rdds(spark) <= cached
    batch_catalog = oracle.catalog_state(consume_all(settings, settings.kafka.catalog_topic))
    assert produce(settings, records[split:]).failed == 0
    run_speed(spark, settings, build(settings).registry, until_caught_up=True)
    # each micro-batch cached its events and its join partners, and released them
    assert cached_rdds(spark) <= cached

    source = source_of(spark, settings)
    assert source.description.startswith(f"batch run {batch.run.run_id} + speed")
    events = assert_served_per_contract(
        spark, settings, LAMBDA_LANE, cutoff=batch.run.cutoff, batch_catalog=batch_catalog
    )
    batches = lane_batches(spark, settings, LAMBDA_LANE)
    assert any(late_counts(events, settings, batches).values()), "some events are late"

    labelled = read_served(spark, settings, "revenue_by_category", with_status=True).collect()
    assert {r.status for r in labelled} == {"final", "provisional"}
    first_window = min(r.window_start for r in labelled)
    assert {r.status for r in labelled if r.window_start == first_window} == {"final"}

    # where the micro-batches' time went: Spark's phases and the lane's inside addBatch
    status = lane_status(spark, settings, LAMBDA_LANE)
    phases = status["median_phase_seconds"]
    inside = {"prepare", "count", "commit", "maintain"}
    assert inside | {"addBatch", "walCommit", "triggerExecution"} <= phases.keys()
    assert phases["commit"] <= phases["addBatch"] <= phases["triggerExecution"]
    assert {"stateUpdates", "stateRemovals", "stateCommit"} <= phases.keys()

    # nothing has expired yet: one de-duplication id per distinct event or malformed record
    valid, malformed = oracle.decode(consume_all(settings, settings.kafka.events_topic))
    assert status["dedup_state"]["rows"] == len({e.event_id for e in valid}) + len(malformed)
