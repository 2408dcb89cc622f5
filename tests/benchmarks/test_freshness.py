"""The freshness benchmark's serving split: from a lane commit to the first answer from it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.freshness import lane_log_path, serving_split
from config.settings import load_settings

pytestmark = pytest.mark.unit


def _commit(log: Path, version: int, at_ms: int) -> None:
    (log / "_delta_log").mkdir(parents=True, exist_ok=True)
    lines = [{"commitInfo": {"timestamp": at_ms}}, {"add": {"path": f"part-{version}"}}]
    (log / "_delta_log" / f"{version:020d}.json").write_text(
        "\n".join(json.dumps(line) for line in lines)
    )


def test_the_lane_log_is_found_where_the_lane_keeps_it(tmp_path: Path) -> None:
    settings = load_settings(storage={"root": str(tmp_path)})
    assert lane_log_path(settings) == tmp_path / "lambda" / "speed" / "log"


def test_each_served_version_lags_its_own_commit(tmp_path: Path) -> None:
    log = tmp_path / "log"
    _commit(log, 7, 1_000_000)
    _commit(log, 8, 1_006_000)
    _commit(log, 9, 1_012_000)

    split = serving_split(log, {8: 1_007.5, 9: 1_014.0}, [(0.01, 100)])

    assert split["versions_served"] == 2
    assert split["versions_committed"] == 2  # 8 and 9; 7 came before the steady phase
    assert split["commit_to_served_seconds"] == {
        "n": 2,
        "p50": 1.5,
        "p95": 2.0,
        "p99": 2.0,
        "max": 2.0,
    }
