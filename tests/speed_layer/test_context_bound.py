"""The join context's bound is rounded down, so its literal changes every few minutes."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from speed_layer.view_input import CONTEXT_STEP
from views.windows import floor_to

pytestmark = pytest.mark.unit


def test_moments_within_one_step_share_one_bound():
    step = timedelta(minutes=5)
    moments = [datetime(2026, 11, 25, 7, 20) + timedelta(seconds=s) for s in (0, 1, 151, 299.999)]
    assert {floor_to(m, step) for m in moments} == {datetime(2026, 11, 25, 7, 20)}
    assert floor_to(datetime(2026, 11, 25, 7, 25), step) == datetime(2026, 11, 25, 7, 25)
    assert floor_to(datetime(2026, 11, 25, 7, 24, 59, 999_999), step) == datetime(
        2026, 11, 25, 7, 20
    )


def test_the_bound_never_passes_the_exact_one_and_lags_it_by_less_than_a_step():
    exact = datetime(2026, 11, 25, 6, 59, 59, 123_456)
    bound = floor_to(exact, CONTEXT_STEP)
    assert bound <= exact < bound + CONTEXT_STEP
