"""``lk status``'s figures computed from a lane's ``_metrics.json``."""

from __future__ import annotations

import pytest

from designs.status import median_phases

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
