"""The benchmarks' stopwatch for a repeated action."""

from __future__ import annotations

import pytest

from measure import laps
from measure.laps import median_run

pytestmark = pytest.mark.unit


def test_the_median_of_the_timed_runs_and_the_last_result(monkeypatch):
    ticks = iter([0.0, 1.0, 10.0, 13.0, 20.0, 22.0])  # runs of 1, 3 and 2 seconds
    monkeypatch.setattr(laps.time, "perf_counter", lambda: next(ticks))
    calls = []

    def run() -> int:
        calls.append(len(calls))
        return len(calls)

    assert median_run(run, 3) == (2.0, 3)
    assert len(calls) == 3


def test_a_warm_up_run_is_not_timed(monkeypatch):
    ticks = iter([0.0, 5.0])
    monkeypatch.setattr(laps.time, "perf_counter", lambda: next(ticks))
    results = iter(["warm-up", "timed"])
    assert median_run(lambda: next(results), 1, warm_up=True) == (5.0, "timed")
