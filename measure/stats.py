"""Percentiles, a lag trend and median/spread: the statistics every report uses."""

from __future__ import annotations

import statistics
from collections.abc import Sequence


def percentile(values: Sequence[float], q: float) -> float:
    """The nearest-rank ``q`` quantile (0..1) of ``values`` (which must not be empty)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def summary(values: Sequence[float], digits: int = 3) -> dict[str, float | int] | None:
    """``n``, p50, p95, p99 and max of ``values``; None when there are none."""
    if not values:
        return None
    return {
        "n": len(values),
        "p50": round(percentile(values, 0.50), digits),
        "p95": round(percentile(values, 0.95), digits),
        "p99": round(percentile(values, 0.99), digits),
        "max": round(max(values), digits),
    }


def slope(samples: Sequence[tuple[float, float]]) -> float:
    """Least-squares slope of ``(t, value)`` samples (value units per second); 0 if flat."""
    if len(samples) < 2:
        return 0.0
    xs, ys = [t for t, _ in samples], [v for _, v in samples]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    var = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / var if var else 0.0


def lag_grows(samples: Sequence[tuple[float, float]], input_events: float, limit: float) -> bool:
    """Whether the lag grew by at least ``limit`` (a share) of the input over the samples.

    The sustainable-rate test of ``measuring.md``: growth = slope x measured span.
    """
    if len(samples) < 2 or input_events <= 0:
        return True
    span = samples[-1][0] - samples[0][0]
    return slope(samples) * span >= limit * input_events


def median_spread(values: Sequence[float]) -> dict[str, float] | None:
    """Median, min and max of repeated measurements (the spread a verdict must respect)."""
    if not values:
        return None
    return {
        "median": statistics.median(values),
        "min": min(values),
        "max": max(values),
        "n": len(values),
    }
