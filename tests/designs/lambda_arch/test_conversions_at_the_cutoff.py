"""``conversions`` at Lambda's nightly handoff: a purchase just after a batch run's cutoff whose
page view lies just before it and reached the speed layer late.

The batch layer counts every event below its cutoff, late or not, so the purchase must
meet that page view as it would inside the batch run; the lane had marked the page view
late for ``conversions`` before the run took it over (issue 37).
"""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

import oracle
from batch_layer.job import run_batch
from config.settings import with_sections
from designs.lambda_arch import LAMBDA_LANE, run_speed
from designs.platform import build
from designs.status import lane_status
from oracle import consume_all
from tests.support.expected import assert_served_per_contract, expected_views, lane_batches
from tests.support.kafka import event_record, produce_spec
from workload.generator import Record, WorkloadSpec
from workload.producer import produce

pytestmark = pytest.mark.integration
SPEC = WorkloadSpec(
    events=300,
    users=30,
    products=20,
    seed=37,
    span=timedelta(hours=2),
    late_fraction=0.0,
    duplicate_fraction=0.0,
    malformed_fraction=0.0,
)
USERS = range(9_001, 9_013)  # users of their own: every conversion below is one of these


def _event(n: int, kind: str, user: int, at: datetime, **extra: object) -> Record:
    return event_record(f"cutoff-{n:04d}", kind, user, 1 + user % SPEC.products, at, **extra)


def test_a_purchase_after_the_cutoff_meets_its_late_page_view_before_it(spark, topic_settings):
    settings = with_sections(topic_settings, stream={"max_offsets_per_trigger": 500})
    lateness = settings.views.lateness("conversions")
    produce_spec(settings, SPEC)
    run_speed(spark, settings, build(settings).registry, until_caught_up=True)
    clock = datetime.fromisoformat(
        lane_status(spark, settings, LAMBDA_LANE)["event_time_clock"].removesuffix("Z")
    )

    # page views behind the lane's conversions watermark: late, kept, counted
    viewed = clock - lateness - timedelta(minutes=5)
    views = [_event(i, "page_view", u, viewed) for i, u in enumerate(USERS)]
    assert produce(settings, views).failed == 0
    run_speed(spark, settings, build(settings).registry, until_caught_up=True)
    late = lane_status(spark, settings, LAMBDA_LANE)["late_rows"]
    assert late.get("conversions", 0) >= len(USERS)

    # the nightly run takes them over; purchases follow, on time, after its cutoff
    batch = run_batch(spark, settings, build(settings).registry)
    bought = clock + timedelta(minutes=1)
    purchases = [
        _event(100 + i, "purchase", u, bought, quantity=1, price=9.5) for i, u in enumerate(USERS)
    ]
    assert produce(settings, purchases).failed == 0
    run_speed(
        spark, settings, build(settings).registry, until_caught_up=True
    )  # the micro-batch that reads them opens the run's epoch

    events = consume_all(settings, settings.kafka.events_topic)
    catalog = oracle.catalog_state(consume_all(settings, settings.kafka.catalog_topic))
    expected = expected_views(
        events,
        {"batch": catalog, "speed": catalog},
        settings,
        lane_batches(spark, settings, LAMBDA_LANE),
        cutoff=batch.run.cutoff,
    )
    window = bought.replace(second=0, microsecond=0)
    row = next(r for r in expected["conversions"] if r["window_start"] == window)
    assert row["converted"] >= len(USERS), "the case happened: every purchase converts"
    assert_served_per_contract(spark, settings, LAMBDA_LANE, cutoff=batch.run.cutoff)
