"""The freshness benchmark's serving split: from a lane commit to the first answer from it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.freshness import (
    LaneCommits,
    flat,
    lane_log_path,
    latencies,
    ratios,
    recent_phases,
    serving_split,
    settings_from_env,
    slices,
    stored,
    utc_epoch,
)
from config.settings import load_settings
from measure.generator import ScheduleReport

pytestmark = pytest.mark.unit


def _commit(log: Path, version: int, at_ms: int, note: str | None = None) -> None:
    (log / "_delta_log").mkdir(parents=True, exist_ok=True)
    info = {"timestamp": at_ms} | ({"userMetadata": note} if note else {})
    lines = [{"commitInfo": info}, {"add": {"path": f"part-{version}"}}]
    (log / "_delta_log" / f"{version:020d}.json").write_text(
        "\n".join(json.dumps(line) for line in lines)
    )


def test_the_lane_log_is_found_where_the_lane_keeps_it(tmp_path: Path) -> None:
    settings = load_settings(storage={"root": str(tmp_path)})
    assert lane_log_path(settings) == tmp_path / "lambda" / "speed" / "log"


def test_storage_counts_the_tables_the_checkpoints_and_the_log_commits(tmp_path: Path) -> None:
    settings = load_settings(storage={"root": str(tmp_path)})
    log = lane_log_path(settings)
    _commit(log, 0, 1_000_000)
    _commit(log, 1, 1_006_000)
    (log / "part-0.parquet").write_bytes(b"x" * 1000)
    state = tmp_path / "lambda" / "speed" / "checkpoint" / "state"
    state.mkdir(parents=True)
    (state / "1.changelog").write_bytes(b"y" * 300)
    commits = sum(f.stat().st_size for f in (log / "_delta_log").iterdir())

    assert stored(settings) == {
        "delta_bytes": 1000 + commits,
        "checkpoint_bytes": 300,
        "log_commit_files": 2,
        "log_read_bytes": None,
        "log_stored_bytes": None,
    }
    (log.parent / "_metrics.json").write_text(
        json.dumps({"log_size": {"bytes": 600, "stored_bytes": 1000 + commits}})
    )
    assert stored(settings)["log_read_bytes"] == 600
    assert stored(settings)["log_stored_bytes"] == 1000 + commits


def test_a_run_records_its_lk_settings_from_the_environment_with_secrets_masked() -> None:
    environ = {
        "LK_STREAM__LOG_RETENTION": "10m",
        "LK_STORAGE__SECRET_KEY": "s3cr3t",
        "LK_SERVING__API_KEY": "k3y",
        "HOME": "/root",
    }

    assert settings_from_env(environ) == {
        "LK_SERVING__API_KEY": "***",
        "LK_STORAGE__SECRET_KEY": "***",
        "LK_STREAM__LOG_RETENTION": "10m",
    }


def test_each_served_version_lags_its_own_commit(tmp_path: Path) -> None:
    log = tmp_path / "log"
    _commit(log, 7, 1_000_000)
    _commit(log, 8, 1_006_000)
    _commit(log, 9, 1_012_000)

    commits = LaneCommits(log)
    commits.read_new()

    split = serving_split(commits.times(), {8: 1_007.5, 9: 1_014.0}, [(0.01, 100)])

    assert split["versions_served"] == 2
    assert split["versions_committed"] == 2  # 8 and 9; 7 came before the steady phase
    assert split["commit_to_served_seconds"] == {
        "n": 2,
        "p50": 1.5,
        "p95": 2.0,
        "p99": 2.0,
        "max": 2.0,
    }


def test_a_served_version_s_lag_is_cut_where_its_reload_ended(tmp_path: Path) -> None:
    log = tmp_path / "log"
    _commit(log, 8, 1_006_000)
    _commit(log, 9, 1_012_000)
    commits = LaneCommits(log)
    commits.read_new()

    reloaded = {8: 1_006.75, 9: 1_012.25}  # version 9's reload ended 0.25 s after its commit
    split = serving_split(commits.times(), {8: 1_007.5, 9: 1_012.5}, [], reloaded)

    assert split["commit_to_served_seconds"]["max"] == 1.5
    assert split["commit_to_reloaded_seconds"] == {
        "n": 2,
        "p50": 0.25,  # the nearest rank, as for the whole lag above
        "p95": 0.75,
        "p99": 0.75,
        "max": 0.75,
    }
    assert split["reloaded_to_served_seconds"]["max"] == 0.75


def test_the_reload_time_lk_serve_sends_is_read_as_utc() -> None:
    assert utc_epoch("1970-01-01T00:00:01.250Z") == 1.25


def test_figures_per_slice_group_by_when_they_happened() -> None:
    points = [(100.0, 1.0), (150.0, 3.0), (700.0, 2.0), (1300.0, 4.0), (50.0, 9.0)]

    per = slices(points, start=100.0, slice_s=600)

    got = [(s["from_minute"], s["to_minute"], s["n"]) for s in per]
    assert got == [(0, 10, 2), (10, 20, 1), (20, 30, 1)]
    assert per[1]["p50"] == 2.0


def test_flat_compares_the_last_whole_slice_with_the_second() -> None:
    per = [
        {"from_minute": 0, "to_minute": 10, "p50": 9.0},
        {"from_minute": 10, "to_minute": 20, "p50": 2.0},
        {"from_minute": 20, "to_minute": 30, "p50": 2.5},
        {"from_minute": 30, "to_minute": 40, "p50": 8.0},  # past the schedule: the drain
    ]

    assert flat(per, seconds=1800, slice_s=600) == {
        "early": "10-20 min",
        "late": "20-30 min",
        "late_over_early_p50": 1.25,
    }
    assert flat(per[:2], seconds=1200, slice_s=600) is None


def test_the_recent_phases_are_the_lanes_medians_and_longest_in_seconds(tmp_path: Path) -> None:
    settings = load_settings(storage={"root": str(tmp_path)})
    assert recent_phases(settings) == {}
    recent = [{"count": 1000, "commit": 3000}, {"count": 2000}, {"count": 4000, "commit": 5000}]
    metrics = lane_log_path(settings).parent / "_metrics.json"
    metrics.parent.mkdir(parents=True)
    metrics.write_text(json.dumps({"recent_phase_ms": recent}))
    assert recent_phases(settings) == {
        "commit": 3.0,
        "count": 2.0,
        "commit_max": 5.0,
        "count_max": 4.0,
    }


def test_a_probe_never_shown_is_counted_unseen_not_left_out_quietly() -> None:
    report = ScheduleReport(rate_target=10, seconds_target=30, started_at=1000.0)
    report.probes = [
        {"id": 1, "due": 1005.0, "acked": 1005.1},  # in the discarded warm-up
        {"id": 2, "due": 1020.0, "acked": 1020.1},
        {"id": 3, "due": 1025.0, "acked": 1025.1},  # never shown
    ]
    figures = latencies(report, {1: 1006.0, 2: 1021.1}, discard_s=10)
    assert (figures["probes_seen"], figures["probes_unseen"]) == (1, 1)
    assert figures["visibility_seconds"]["p99"] == 1.0


def test_no_ratio_is_made_with_a_contender_that_stopped_showing_probes() -> None:
    def contender(p99: float, unseen: int) -> dict:
        return {"visibility_seconds": {"p99": p99}, "probes_unseen": unseen}

    both_kept_up = {"floor-views": contender(20.0, 0), "lk": contender(30.0, 0)}
    assert ratios(both_kept_up) == {"lk_p99_over_floor-views_p99": 1.5}
    floor_stalled = {"floor-views": contender(20.0, 900), "lk": contender(30.0, 0)}
    assert ratios(floor_stalled) == {}
    lk_stalled = {"floor-views": contender(20.0, 0), "lk": contender(30.0, 4)}
    assert ratios(lk_stalled) == {}


def test_serving_is_set_beside_the_serving_floor_from_their_commit_to_answer_times() -> None:
    def contender(p50: float, p99: float) -> dict:
        return {
            "visibility_seconds": {"p99": 9.0},
            "probes_unseen": 0,
            "serving": {"commit_to_served_seconds": {"p50": p50, "p99": p99}},
        }

    results = {"lk": contender(0.5, 1.2), "serving-floor": contender(0.25, 0.4)}
    assert ratios(results) == {
        "lk_commit_to_served_p50_over_serving_floor": 2.0,
        "lk_commit_to_served_p99_over_serving_floor": 3.0,
    }


def test_a_commit_read_during_the_run_keeps_its_time_after_retention_deletes_its_file(
    tmp_path: Path,
) -> None:
    log = tmp_path / "log"
    _commit(log, 0, 1_000_000, note="micro-batch 0")
    _commit(log, 1, 1_004_000)  # a maintenance commit: no micro-batch
    commits = LaneCommits(log)
    commits.read_new()
    (log / "_delta_log" / f"{0:020d}.json").unlink()  # expired at a checkpoint
    _commit(log, 2, 1_009_000, note="micro-batch 1")
    _commit(log, 3, 1_015_000, note="micro-batch 1")  # undone by a recovery, run again
    commits.read_new()

    assert commits.times() == {0: 1_000.0, 1: 1_004.0, 2: 1_009.0, 3: 1_015.0}
    assert commits.batches() == {0: 1_000.0, 1: 1_015.0}
