from __future__ import annotations

import pytest

from measure.stats import lag_grows, median_spread, percentile, slope, summary

pytestmark = pytest.mark.unit


def test_percentiles_are_nearest_rank() -> None:
    values = list(range(1, 101))  # 1..100
    assert percentile(values, 0.5) == 51
    assert percentile(values, 0.99) == 99
    assert summary(values) == {"n": 100, "p50": 51, "p95": 95, "p99": 99, "max": 100}
    assert summary([]) is None


def test_lag_trend() -> None:
    flat = [(t, 100.0) for t in range(10)]
    rising = [(t, 100.0 + 50 * t) for t in range(10)]
    assert slope(flat) == 0
    assert slope(rising) == pytest.approx(50)
    # 450 offsets of growth over 9 s against 10,000 input events: 4.5 % >= 1 %
    assert lag_grows(rising, 10_000, 0.01)
    assert not lag_grows(flat, 10_000, 0.01)


def test_median_spread() -> None:
    assert median_spread([3.0, 1.0, 2.0]) == {"median": 2.0, "min": 1.0, "max": 3.0, "n": 3}
