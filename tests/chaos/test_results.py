"""The results table from literal outcomes (no broker, no Spark)."""

from __future__ import annotations

import json

import pytest

from chaos import runner
from chaos.results import Outcome, ResumeError, markdown, resumed, summarize, write

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


def test_a_resumed_pass_keeps_what_the_cut_off_one_recorded(tmp_path) -> None:
    earlier = [Outcome("speed_sigkill", 17, faults=3, events_checked=2000, notes=["x"])]
    write(earlier, tmp_path, seed=17, runs=20, events=2000, complete=False)
    assert resumed(tmp_path, seed=17, runs=20, events=2000) == earlier
    assert resumed(tmp_path / "nothing-yet", seed=17, runs=20, events=2000) == []
    with pytest.raises(ResumeError, match="'seed': 18"):
        resumed(tmp_path, seed=18, runs=20, events=2000)
    with pytest.raises(ResumeError, match="'events': 1000"):
        resumed(tmp_path, seed=17, runs=20, events=1000)


def test_run_all_skips_the_runs_already_done(monkeypatch) -> None:
    ran: list[tuple[str, int]] = []

    def scenario(name: str):
        def run(bench, seed: int) -> Outcome:
            ran.append((name, seed))
            return Outcome(name, seed)

        return run

    monkeypatch.setattr(runner, "scenarios", lambda: {n: scenario(n) for n in ("a", "b")})
    outcomes = runner.run_all(None, 17, 2, done={("a", 17), ("b", 17), ("a", 18)})
    assert ran == [("b", 18)]
    assert [(o.scenario, o.seed) for o in outcomes] == [("b", 18)]
