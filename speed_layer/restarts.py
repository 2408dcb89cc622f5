"""When a failed lane may start again: Spark's restart bug once, a lost log for a while.

:func:`speed_layer.stream.run_lane` restarts its query from the checkpoint on these two
failures only (what it committed stays committed, the micro-batch it was in runs again,
as after a crash); any other failure ends the lane.
"""

from __future__ import annotations

import time
from dataclasses import dataclass


def is_restart_metrics_bug(error: BaseException) -> bool:
    """Spark 4.1's Kafka source NPEs in ``metrics`` after re-running a planned batch.

    It happens once, at the end of the first micro-batch after a restart from a crash
    (the batch itself and its commit are done by then); a second start goes on normally.
    """
    return "KafkaMicroBatchStream.metrics" in str(error) or (
        "NullPointerException" in str(error) and "Option.get()" in str(error)
    )


@dataclass
class Outage:
    """How long the log has been out of reach, counted across restarts of a lane.

    A micro-batch committed since the last failure ends the outage: a lane that
    recovers and fails again later gets the whole ``stream.log_outage`` again.
    """

    limit_s: float
    since: float | None = None
    batches_then: int = 0
    restarts: int = 0

    def goes_on(self, batches: int) -> bool:
        """Record a failure; whether the lane may restart (:attr:`backoff_s` says when)."""
        now = time.monotonic()
        if self.since is None or batches > self.batches_then:
            self.since, self.restarts = now, 0
        self.batches_then = batches
        self.restarts += 1
        return now - self.since < self.limit_s

    @property
    def backoff_s(self) -> float:
        """1, 2, 4 ... seconds between restarts, at most 30."""
        return float(min(2 ** (self.restarts - 1), 30))
