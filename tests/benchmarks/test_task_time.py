"""The event-log reader: task time adds up per job call site, and per minute for one site."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.task_time import log_events, task_time

pytestmark = pytest.mark.unit


def _job(job: int, at_ms: int, site: str, stages: list[int]) -> dict:
    return {
        "Event": "SparkListenerJobStart",
        "Job ID": job,
        "Submission Time": at_ms,
        "Stage IDs": stages,
        "Properties": {"callSite.short": site},
    }


def _task(stage: int, run_ms: int, cpu_ns: int) -> dict:
    metrics = {"Executor Run Time": run_ms, "Executor CPU Time": cpu_ns}
    return {"Event": "SparkListenerTaskEnd", "Stage ID": stage, "Task Metrics": metrics}


EVENTS = [
    _job(0, 1_000, "collect at serving_layer/alerts.py:199", [0]),
    _task(0, 4_000, 2_000_000_000),
    _task(0, 6_000, 3_000_000_000),
    _job(1, 2_000, "start at NativeMethodAccessorImpl.java:0", [1, 2]),
    _task(1, 1_000, 500_000_000),
    _task(2, 500, 0),
    _job(2, 61_500, "collect at serving_layer/alerts.py:199", [3]),
    _task(3, 20_000, 9_000_000_000),
]


def test_task_time_per_call_site_and_per_minute_of_one() -> None:
    found = task_time(EVENTS, site="alerts.py")
    assert found["sites"] == [
        {
            "site": "collect at serving_layer/alerts.py:199",
            "tasks": 3,
            "run_s": 30.0,
            "cpu_s": 14.0,
        },
        {
            "site": "start at NativeMethodAccessorImpl.java:0",
            "tasks": 2,
            "run_s": 1.5,
            "cpu_s": 0.5,
        },
    ]
    assert found["per_minute"] == [
        {"minute": 0, "run_s": 10.0, "cpu_s": 5.0},
        {"minute": 1, "run_s": 20.0, "cpu_s": 9.0},
    ]


def test_a_rolling_log_is_read_from_its_directory_and_a_compressed_one_named(
    tmp_path: Path,
) -> None:
    (tmp_path / "events_1_app").write_text("\n".join(json.dumps(e) for e in EVENTS[:3]) + "\n")
    (tmp_path / "events_2_app").write_text("\n".join(json.dumps(e) for e in EVENTS[3:]) + "\n")
    assert list(log_events(tmp_path)) == EVENTS
    packed = tmp_path / "events_1_other.zstd"
    packed.write_bytes(b"\x28\xb5\x2f\xfd")
    with pytest.raises(ValueError, match=r"events_1_other\.zstd is compressed"):
        list(log_events(packed))
