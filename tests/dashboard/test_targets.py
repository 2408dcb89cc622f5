"""The designs of an ``lk compare`` run, found from its job files as they start."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from config.settings import load_settings, with_sections
from dashboard.targets import compare_runs

pytestmark = pytest.mark.unit


def test_each_design_is_found_with_its_own_topic_and_storage(tmp_path: Path) -> None:
    base = load_settings()
    assert compare_runs(tmp_path) == []
    for design in ("lambda", "kappa"):
        settings = with_sections(
            base, kafka={"events_topic": f"events_{design}"}, storage={"root": f"/x/{design}"}
        ).model_copy(update={"mode": design})
        job = tmp_path / f"{design}_42_scenario"
        job.mkdir()
        (job / "job.json").write_text(
            json.dumps({"settings": settings.model_dump(mode="json"), "seed": 42})
        )
    (tmp_path / "half_written").mkdir()
    (tmp_path / "half_written" / "job.json").write_text("{")
    found = compare_runs(tmp_path)
    assert [t.settings.mode for t in found] == ["lambda", "kappa"]
    assert [t.settings.kafka.events_topic for t in found] == ["events_lambda", "events_kappa"]
    assert found[1].label == "kappa (seed 42, kappa_42_scenario)"
