"""``lk status``'s figures computed from a lane's ``_metrics.json``."""

from __future__ import annotations

import pytest

from config.settings import load_settings
from designs.status import median_phases, with_ids_held

pytestmark = pytest.mark.unit


def test_each_phase_gets_the_median_of_the_micro_batches_that_reported_it():
    recent = [
        {"addBatch": 4_000, "commit": 2_500, "maintain": 0},
        {"addBatch": 9_000, "commit": 6_000, "maintain": 2_000},
        {"addBatch": 5_000, "commit": 3_000},  # an older lane did not time its phases
        {"addBatch": 6_000},
    ]
    assert median_phases(recent) == {
        "addBatch": 6.0,
        "commit": 3.0,
        "maintain": 2.0,
    }


def test_no_recent_micro_batch_means_no_phases():
    assert median_phases([]) == {}


STATE = {"rows": 0, "rows_updated": 0, "duplicates": 3, "stateUpdates": 120}


def test_without_a_horizon_the_ids_held_are_the_records_the_lane_let_through():
    settings = load_settings(stream={"dedup_horizon": None})
    got = with_ids_held(STATE, settings, {"input_rows": 1_234})
    assert got == {"rows": 1_234, "rows_updated": 0, "duplicates": 3, "stateUpdates": 120}


def test_with_a_horizon_spark_counts_the_ids_held_as_they_expire():
    settings = load_settings(stream={"dedup_horizon": "30 minutes"})
    state = {**STATE, "rows": 987}
    assert with_ids_held(state, settings, {"input_rows": 1_234}) == state
    assert with_ids_held(None, settings, {"input_rows": 1_234}) is None
