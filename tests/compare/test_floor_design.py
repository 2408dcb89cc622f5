"""The views floor's run in ``lk compare``, as the comparison starts it: a process of its own.

About 4 minutes on two busy cores (a JVM, the views' first compilation): marker ``scenario``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from compare.options import CompareOptions
from config.settings import Settings
from tests.conftest import REPO
from tests.support.kafka import produce_spec
from workload.generator import WorkloadSpec

pytestmark = [pytest.mark.integration, pytest.mark.scenario]


def test_the_floor_reads_the_history_then_shows_every_live_probe(
    topic_settings: Settings, tmp_path: Path
) -> None:
    produce_spec(topic_settings, WorkloadSpec(events=300, seed=3, users=10, products=5))
    opts = CompareOptions(events=300, rate=20, live_seconds=4, probe_every=4, warmup_s=0)
    job = {
        "settings": topic_settings.model_dump(mode="json"),
        "options": opts.model_dump(mode="json"),
        "seed": 3,
        "workdir": str(tmp_path),
        "out": str(tmp_path / "result.json"),
    }
    (tmp_path / "job.json").write_text(json.dumps(job, default=str))
    subprocess.run(
        [sys.executable, "-m", "compare.floor_design", str(tmp_path / "job.json")],
        cwd=REPO,
        check=True,
        timeout=600,
    )
    result = json.loads((tmp_path / "result.json").read_text())
    fresh = result["freshness"]
    # 80 records at 20/s, a probe every 4th: 20 probes, each committed by the floor
    assert (fresh["probes"], fresh["seen"], fresh["never_seen_unexplained"]) == (20, 20, 0)
    assert fresh["negative_values"] == 0
    assert result["live"]["micro_batches"] >= 1
