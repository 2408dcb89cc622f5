"""A lane that stops once caught up leaves its last metrics; a failed one says why."""

from __future__ import annotations

import pytest

from speed_layer import stream
from speed_layer.stream import _await_progress

pytestmark = pytest.mark.unit


class _Query:
    """Reports batch ``reported`` until ``lag`` polls have passed, then ``committed``."""

    def __init__(self, reported: int, committed: int, lag: int, ends: bool = False) -> None:
        self.reported, self.committed, self.lag, self.ends = reported, committed, lag, ends
        self.polls = 0

    @property
    def lastProgress(self) -> dict:
        return {"batchId": self.committed if self.polls >= self.lag else self.reported}

    def awaitTermination(self, timeout: float) -> bool:
        self.polls += 1
        return self.ends


def test_the_wait_ends_when_the_committed_batch_is_reported():
    query = _Query(reported=4, committed=5, lag=3)
    _await_progress(query, 5)
    assert query.lastProgress["batchId"] == 5
    assert query.polls == 3


def test_a_query_that_ended_or_a_lane_with_no_commit_is_not_waited_for():
    ended = _Query(reported=4, committed=5, lag=100, ends=True)
    _await_progress(ended, 5)
    assert ended.polls == 1
    fresh = _Query(reported=0, committed=0, lag=100)
    _await_progress(fresh, None)
    assert fresh.polls == 0


def test_the_wait_is_bounded():
    stuck = _Query(reported=4, committed=5, lag=10**9)
    _await_progress(stuck, 5, timeout_s=0.05)
    assert stuck.lastProgress["batchId"] == 4


def test_a_failed_lane_says_why_without_the_plan():
    spark_text = (
        "[STREAM_FAILED] Query [id = 1, runId = 2] terminated with exception: "
        "org.apache.kafka.common.errors.TimeoutException: Timed out waiting for a node\n"
        "\n=== Streaming Query ===\nIdentifier: lambda_speed\n\nCurrent Logical Plan:\n"
        + "\n".join(f"   +- Project [column#{n}]" for n in range(100))
    )
    message = str(stream.LaneFailedError("lambda-speed", RuntimeError(spark_text)))
    assert message == (
        "lane lambda-speed failed: [STREAM_FAILED] Query [id = 1, runId = 2] terminated with "
        "exception: org.apache.kafka.common.errors.TimeoutException: Timed out waiting for a node"
    )
    traceback = "\n".join(f"  line {n}" for n in range(100))
    long = str(stream.LaneFailedError("kappa-v2", ValueError(traceback))).splitlines()
    assert len(long) == stream.REASON_LINES + 1
    assert long[-1] == "... (60 more lines)"
