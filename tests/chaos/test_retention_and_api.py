"""Retention under a lagging lane, and the HTTP API under load with bad queries."""

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


def test_api_under_load_with_bad_queries_has_no_5xx_and_keeps_its_budget(bench) -> None:
    assert_clean(api.run(bench, SEED, requests=1_500))
