"""corrected_purchases in Spark: equal to the oracle on a log with skewed device clocks, and
closer to the true minutes than raw device time (the figures in docs/semantics.md)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from pyspark.sql import functions as F

import oracle
from batch_layer.bronze import first_copies
from config.settings import ViewSettings
from event_log.decode import decode_events, valid_events
from tests.support.workload import as_logged, assert_view_matches, kafka_frame
from views.base import ViewContext
from views.corrected_purchases import VIEW
from workload.generator import WorkloadSpec, clock_skews, generate

pytestmark = pytest.mark.integration
MS = timedelta(milliseconds=1)
SPEC = WorkloadSpec(
    events=6_000,
    users=60,
    products=40,
    seed=11,
    log_time=True,
    skewed_users_fraction=0.5,
    max_clock_skew=timedelta(minutes=2),
)


@pytest.fixture(scope="module")
def skewed(spark):
    logged = as_logged(generate(SPEC), "events", 3)
    frame = first_copies(valid_events(decode_events(kafka_frame(spark, logged)))).cache()
    decoded, _ = oracle.decode(logged)
    return frame, oracle.dedup(decoded)


def test_equals_the_oracle_and_is_exact_for_any_split(skewed):
    frame, unique = skewed
    ctx = ViewContext(ViewSettings())
    expected = oracle.corrected_purchases(unique)
    assert_view_matches(VIEW.evaluate(frame, ctx), expected, VIEW.name)
    parts = [VIEW.compute(frame.where(F.col("offset") % 3 == k), ctx) for k in range(3)]
    state = parts[0].unionByName(parts[1]).unionByName(parts[2])
    assert_view_matches(VIEW.serve(state), expected, VIEW.name)


def test_corrected_minutes_are_closer_to_the_truth_than_raw_ones(skewed):
    frame, unique = skewed
    true_offsets = {user: round(skew / MS) for user, skew in clock_skews(SPEC).items()}
    truth = oracle.purchases_by_minute(unique, None, true_offsets)
    served = [r.asDict() for r in VIEW.evaluate(frame, ViewContext(ViewSettings())).collect()]
    # of 815 purchases, raw device time files 183 in the wrong minute, corrected time 1
    assert oracle.distance(oracle.purchases_by_minute(unique), truth) == 183
    assert oracle.distance(served, truth) == 1
