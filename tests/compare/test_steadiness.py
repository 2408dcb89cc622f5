"""When a live phase's figures describe start-up rather than the design at work."""

from __future__ import annotations

from datetime import timedelta

import pytest

from compare.steadiness import state_horizons, steadiness
from config.settings import load_settings
from views.registry import default_registry

pytestmark = pytest.mark.unit

FIVE_MIN = {"conversions look-back": timedelta(minutes=5)}


def test_flat_micro_batches_over_a_phase_longer_than_the_state_are_steady() -> None:
    durations = [9.0, 1.0, 1.1, 0.9, 1.0, 1.0, 1.05, 0.95, 1.0, 1.1, 1.0]
    judged = steadiness(durations, live_s=600, horizons=FIVE_MIN)
    assert judged["steady"] is True
    assert judged["why_not"] == []
    assert judged["first_micro_batch_s"] == 9.0
    assert (judged["median_first_half_s"], judged["median_second_half_s"]) == (1.0, 1.0)


def test_a_short_phase_says_which_state_had_not_filled() -> None:
    judged = steadiness([1.0] * 12, live_s=20, horizons=FIVE_MIN)
    assert judged["why_not"] == [
        "the live phase ran 20 s, shorter than the conversions look-back (300 s) "
        "its state takes to fill"
    ]


def test_shrinking_micro_batches_are_start_up() -> None:
    durations = [30.0, 8.0, 7.0, 6.0, 5.0, 4.0, 2.0, 2.0, 1.5, 1.5, 1.5, 1.5]
    judged = steadiness(durations, live_s=600, horizons=FIVE_MIN)
    assert judged["steady"] is False
    assert judged["why_not"] == [
        "micro-batches still shrinking: median 6 s in the first half, 1.5 s in the second"
    ]


def test_too_few_micro_batches_show_no_trend() -> None:
    judged = steadiness([65.0, 12.0, 3.0], live_s=600, horizons={})
    assert judged["why_not"] == ["3 micro-batches, too few to show a trend (at least 10)"]


def test_the_horizons_are_the_join_look_backs_and_a_set_de_duplication_horizon() -> None:
    settings = load_settings(stream={"dedup_horizon": "2 hours"})
    horizons = state_horizons(settings, default_registry())
    assert horizons["de-duplication horizon"] == timedelta(hours=2)
    assert horizons["conversions look-back"] == settings.views.conversion_lookback
    assert "de-duplication horizon" not in state_horizons(load_settings(), default_registry())
