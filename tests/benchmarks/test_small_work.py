"""The small-work benchmark's verdicts: each operation against its target and its floor."""

from __future__ import annotations

import pytest

from benchmarks.small_work import breakdown, covered, over_floor, verdict

pytestmark = pytest.mark.unit


def _report(first: float, second: float, micro_batch: tuple[float, float] | None = None) -> dict:
    steps = [{}, {}] if micro_batch is None else [{"micro_batch": m} for m in micro_batch]
    return {
        "runs": [
            {"seconds": first, "steps": steps[0], "spark_jobs": 1},
            {"seconds": second, "steps": steps[1], "spark_jobs": 1},
        ]
    }


def test_an_operation_is_held_against_its_target_in_a_fresh_process():
    assert verdict("batch", _report(16.0, 9.0)) == {
        "seconds": 16.0,
        "warm_seconds": 9.0,
        "target_s": 15.0,
        "met": False,
    }
    speed = verdict("speed", _report(20.0, 12.0, micro_batch=(9.5, 4.0)))
    assert speed == {"seconds": 9.5, "warm_seconds": 4.0, "target_s": 10.0, "met": True}


def test_a_floor_has_no_target_and_names_what_it_is_the_floor_of():
    assert verdict("floor_job", _report(12.0, 5.0)) == {
        "seconds": 12.0,
        "warm_seconds": 5.0,
        "floor_of": ["batch", "kappa"],
    }
    first = verdict("floor_micro_batch", _report(30.0, 20.0, micro_batch=(6.0, 2.5)))
    assert first["seconds"] == 6.0 and first["floor_of"] == ["speed"]


def test_each_operation_is_divided_by_its_own_floor_fresh_and_warm():
    results = {
        "batch": {"seconds": 24.0, "warm_seconds": 9.0},
        "kappa": {"seconds": 18.0, "warm_seconds": 6.0},
        "speed": {"seconds": 14.0, "warm_seconds": 6.0},
        "floor_job": {"seconds": 12.0, "warm_seconds": 4.5},
        "floor_micro_batch": {"seconds": 7.0, "warm_seconds": 3.0},
    }
    assert over_floor(results) == {
        "batch": {"fresh": 2.0, "warm": 2.0},
        "kappa": {"fresh": 1.5, "warm": 1.33},
        "speed": {"fresh": 2.0, "warm": 2.0},
    }
    assert over_floor({"batch": results["batch"]}) == {}, "no floor measured, no ratio"


def test_overlapping_executions_are_counted_once_and_clipped_to_the_run():
    spans = [(10.0, 14.0), (12.0, 15.0), (20.0, 21.0), (8.0, 11.0), (29.0, 40.0)]
    assert covered(spans, (10.0, 30.0)) == 4.0 + 1.0 + 1.0 + 1.0  # 10-14, 14-15, 20-21, 29-30
    assert covered([], (0.0, 5.0)) == 0.0


def test_a_runs_time_splits_into_delta_log_work_other_spark_work_and_the_driver_alone():
    ran = [
        ("Delta: Filtering files for query", (0.0, 1.0)),
        ("save at NativeMethodAccessorImpl.java:0", (0.5, 4.0)),
        ("$anonfun$recordDeltaOperationInternal$1 at DatabricksLogging.scala:128", (6.0, 7.0)),
        ("collectToPython at NativeMethodAccessorImpl.java:0", (8.0, 9.0)),
    ]
    assert breakdown(ran, (0.0, 10.0)) == {
        "sql_executions": 4,
        "delta_log_executions": 2,
        "spark_s": 6.0,
        "delta_log_s": 2.0,
        "driver_only_s": 4.0,
    }
