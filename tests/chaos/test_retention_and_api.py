"""Retention under a lagging lane, and the HTTP API under load with bad queries.

The scenarios that run Spark processes for minutes (2-5 each) are marked ``scenario``:
``make scenarios`` and ``lk chaos`` run them, CI does not (the SIGKILLs they cover are also
tested in tests/speed_layer/test_crash_recovery.py, tests/batch_layer/test_batch_job.py
and tests/designs/kappa/test_reprocess_routes.py)."""

from __future__ import annotations

import pytest

from chaos.scenarios import api, retention
from tests.chaos.conftest import SEED, assert_clean

pytestmark = pytest.mark.chaos


def test_retention_past_a_lagging_lane_is_named_and_kappa_refuses(bench) -> None:
    outcome = retention.run(bench, SEED)
    assert_clean(outcome)
    assert any(n.startswith("lane refused: lane lambda-speed") for n in outcome.notes)
    assert any(n.startswith("Kappa refused") for n in outcome.notes)


@pytest.mark.scenario
def test_api_under_load_with_bad_queries_has_no_5xx_and_flat_memory(bench) -> None:
    outcome = api.run(bench, SEED, requests=1_500)
    assert_clean(outcome)  # no 5xx, every good query 200, no bad one accepted, RSS flat
    # both kinds were sent (one in three bad), and the figures the verdict rests on were read
    assert 300 <= outcome.faults <= 700, outcome.notes
    summary = outcome.notes[0]
    assert summary.startswith("1500 requests"), summary
    assert ": 0 5xx, 0 good not 200, 0 bad accepted, RSS " in summary, summary
