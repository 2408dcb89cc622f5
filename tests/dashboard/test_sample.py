"""How the page names a lane's state, from the process probe and the lane's progress."""

from __future__ import annotations

import pytest

from dashboard.sample import STALE_AFTER_S, lane_state

pytestmark = pytest.mark.unit

NOW = 1_800_000_000.0


def lane(lag: int) -> dict:
    return {"exists": True, "total_lag": lag}


def test_a_dead_process_is_stopped_whatever_its_last_micro_batch() -> None:
    assert lane_state(lane(0), NOW - 1, NOW, alive=False) == "stopped"


def test_a_live_process_is_running_or_caught_up_or_stuck() -> None:
    assert lane_state(lane(40), NOW - 2, NOW, alive=True) == "running"
    assert lane_state(lane(0), NOW - 600, NOW, alive=True) == "caught up"
    assert lane_state(lane(40), NOW - STALE_AFTER_S - 1, NOW, alive=True) == "stuck"
    assert lane_state(lane(40), None, NOW, alive=True) == "starting"


def test_without_a_probe_waiting_events_and_no_micro_batch_mean_stopped() -> None:
    assert lane_state(lane(40), NOW - STALE_AFTER_S - 1, NOW, alive=None) == "stopped"
    assert lane_state(lane(40), NOW - 2, NOW, alive=None) == "running"
    assert lane_state(lane(0), NOW - 600, NOW, alive=None) == "caught up"


def test_a_lane_not_created_yet_says_so() -> None:
    assert lane_state({"exists": False}, None, NOW, alive=True) == "not started"
