"""The oracle's purchase_bursts: every sliding interval [t - 5 min, t], both ends inclusive."""

from __future__ import annotations

from datetime import timedelta

import pytest

from config.settings import ViewSettings
from oracle import purchase_bursts
from tests.oracle.test_oracle_views import MIN, MS, T0, ev

pytestmark = pytest.mark.unit


def _burst(user: int, at, purchases: int) -> dict:
    return {"user_id": user, "burst_at": at, "window_start": at - 5 * MIN, "purchases": purchases}


def test_three_purchases_within_five_minutes_are_a_burst_at_the_third() -> None:
    events = [ev("purchase", T0), ev("purchase", T0 + 2 * MIN), ev("purchase", T0 + 5 * MIN)]
    assert purchase_bursts(events) == [_burst(1, T0 + 5 * MIN, 3)]


def test_the_interval_is_inclusive_at_both_ends_and_no_wider() -> None:
    events = [ev("purchase", T0), ev("purchase", T0 + MIN), ev("purchase", T0 + 5 * MIN + MS)]
    assert purchase_bursts(events) == []


def test_sliding_not_hopping_a_burst_across_a_minute_boundary_counts() -> None:
    """Hops of 1 minute would see at most 2 here; the interval ending at 10:04:59.5 sees 3."""
    at = T0 + 4 * MIN + timedelta(seconds=59.5)
    events = [ev("purchase", T0 + timedelta(seconds=0.5)), ev("purchase", T0 + 3 * MIN)]
    events.append(ev("purchase", at))
    assert purchase_bursts(events) == [_burst(1, at, 3)]


def test_every_purchase_time_that_closes_a_burst_is_a_row_once() -> None:
    same = T0 + 2 * MIN
    events = [
        ev("purchase", T0),
        ev("purchase", T0 + MIN),
        ev("purchase", same),
        ev("purchase", same),  # two purchases at one time: one row, counted twice
        ev("page_view", T0 + MIN),  # not a purchase
        ev("purchase", T0 + MIN, user=2),
    ]
    assert purchase_bursts(events) == [_burst(1, same, 4)]


def test_threshold_and_interval_come_from_settings() -> None:
    events = [ev("purchase", T0), ev("purchase", T0 + 9 * MIN)]
    settings = ViewSettings(burst_threshold=2, burst_window=timedelta(minutes=10))
    assert purchase_bursts(events, settings) == [
        {"user_id": 1, "burst_at": T0 + 9 * MIN, "window_start": T0 - MIN, "purchases": 2}
    ]
