"""The results table from literal outcomes (no broker, no Spark)."""

from __future__ import annotations

import json

import pytest

from chaos.results import Outcome, markdown, summarize, write

pytestmark = pytest.mark.unit


def test_the_table_sums_each_scenario_and_flags_what_is_not_clean(tmp_path) -> None:
    outcomes = [
        Outcome("speed_sigkill", 1, faults=3, events_checked=2000),
        Outcome("speed_sigkill", 2, faults=3, events_checked=2000, lost=1),
        Outcome("api_bad_queries", 1, faults=500, error="boom"),
    ]
    assert summarize(outcomes)["speed_sigkill"] == {
        "runs": 2,
        "faults": 6,
        "events_checked": 4000,
        "lost": 1,
        "duplicated": 0,
        "unexplained": 0,
        "errors": 0,
    }
    assert [o.clean for o in outcomes] == [True, False, False]
    table = markdown(outcomes)
    assert "| `speed_sigkill` | 2 | 6 | 4,000 | 1 | 0 | 0 | 0 |" in table
    assert "| **all** | **3** | **506** | **4,000** | **1** | **0** | **0** | **1** |" in table
    json_path, md_path = write(outcomes, tmp_path, seed=1, runs=2)
    assert json.loads(json_path.read_text())["summary"]["api_bad_queries"]["errors"] == 1
    assert md_path.read_text() == table
