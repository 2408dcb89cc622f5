"""Clock skew: offsets estimated from sent and append times bring purchases back to the
minute they truly happened in (the generator knows each device's true offset)."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

import oracle
from tests.oracle.test_oracle_views import MIN, T0, ev
from tests.support.workload import as_logged
from workload.generator import WorkloadSpec, clock_skews, generate

pytestmark = pytest.mark.unit
MS = timedelta(milliseconds=1)


def _skewed(spec: WorkloadSpec) -> tuple[list[oracle.Event], list[dict]]:
    """The workload's unique events, and the true per-minute purchases."""
    events, _ = oracle.decode(as_logged(generate(spec), "events", 3))
    unique = oracle.dedup(events)
    true_offsets = {user: round(skew / MS) for user, skew in clock_skews(spec).items()}
    return unique, oracle.purchases_by_minute(unique, None, true_offsets)


@pytest.mark.parametrize(
    ("fraction", "skew", "skewed_users", "raw_misfiled", "corrected_misfiled"),
    [(0.05, 30, 3, 3, 1), (0.2, 60, 8, 30, 1), (0.5, 120, 29, 183, 1)],
)
def test_corrected_time_files_purchases_closer_to_the_truth(
    fraction, skew, skewed_users, raw_misfiled, corrected_misfiled
):
    spec = WorkloadSpec(
        events=6_000,
        users=60,
        products=40,
        seed=11,
        log_time=True,
        skewed_users_fraction=fraction,
        max_clock_skew=timedelta(seconds=skew),
    )
    unique, truth = _skewed(spec)
    assert sum(r["purchases"] for r in truth) == 815
    assert sum(1 for s in clock_skews(spec).values() if s) == skewed_users
    raw = oracle.purchases_by_minute(unique)
    assert oracle.distance(raw, truth) == raw_misfiled
    assert oracle.distance(oracle.corrected_purchases(unique), truth) == corrected_misfiled
    # each estimate is within the transit delay (0-399 ms) of the device's true offset
    estimates = oracle.device_offsets(unique)
    for user, true_skew in clock_skews(spec).items():
        assert 0 <= true_skew / MS - estimates[user] < 400


def _at(at: datetime, sent: datetime, appended: datetime, user: int = 1) -> oracle.Event:
    event = ev("purchase", at, user=user)
    return oracle.Event(
        event.event_id,
        event.event_type,
        event.user_id,
        event.product_id,
        event.quantity,
        event.price,
        event.event_time,
        event.partition,
        event.offset,
        sent,
        appended,
    )


def test_the_offset_is_the_lower_median_of_sent_minus_append():
    s = timedelta(seconds=1)
    events = [
        _at(T0, T0 + 30 * s, T0),  # 30 s ahead
        _at(T0, T0 + 31 * s, T0),
        _at(T0, T0 + 90 * s, T0),  # one very slow send: the median ignores it
        _at(T0, T0 + 29 * s, T0),
        _at(T0, T0, T0, user=2),
    ]
    assert oracle.device_offsets(events) == {1: 30_000, 2: 0}
    corrected = oracle.corrected_purchases([_at(T0 + 20 * s, T0 + 30 * s, T0)])
    assert corrected == [{"window_start": T0 - MIN, "window_end": T0, "purchases": 1}]
