"""The sustainable-rate judgement and search, on literal lags and a fake trial."""

from __future__ import annotations

import pytest

from measure.sustain import judge, search

pytestmark = pytest.mark.unit


def test_a_flat_saw_is_sustainable_and_a_rising_one_is_not() -> None:
    # lag after each commit, every 10 s at 1,000 events/s: 60,000 events sent over the span
    flat = [(60.0 + 10 * i, 5_000.0 + (300 if i % 2 else -300)) for i in range(7)]
    rising = [(60.0 + 10 * i, 5_000.0 + 200 * i) for i in range(7)]
    assert judge(1_000, flat, valid=True)["sustainable"]
    verdict = judge(1_000, rising, valid=True)
    assert not verdict["sustainable"]
    assert verdict["lag_growth_share_of_input"] == pytest.approx(0.02)


def test_too_few_commits_or_a_late_generator_never_pass() -> None:
    assert not judge(1_000, [(60.0, 10.0)], valid=True)["sustainable"]
    flat = [(60.0, 10.0), (70.0, 10.0), (80.0, 10.0)]
    assert not judge(1_000, flat, valid=False)["sustainable"]


def test_the_search_doubles_then_bisects_and_reports_both_ends() -> None:
    tried: list[int] = []

    def trial(rate: int) -> dict:
        tried.append(rate)
        return {"rate": rate, "valid": True, "sustainable": rate <= 5_000}

    found = search(trial, 2_000, 5)
    assert tried == [2_000, 4_000, 8_000, 6_000, 5_000]
    assert found["highest_sustainable_rate"] == 5_000
    assert found["lowest_failed_rate"] == 6_000


def test_the_search_halves_when_the_start_fails_and_stops_on_a_late_generator() -> None:
    def trial(rate: int) -> dict:
        return {"rate": rate, "valid": rate < 4_000, "sustainable": False}

    found = search(trial, 2_000, 4)
    assert [t["rate"] for t in found["trials"]] == [2_000, 1_000, 500, 200]
    assert found["highest_sustainable_rate"] is None
    assert found["lowest_failed_rate"] == 200
    assert found["generator_fell_behind_at"] is None
    assert search(trial, 4_000, 4)["trials"] == [
        {"rate": 4_000, "valid": False, "sustainable": False}
    ]
