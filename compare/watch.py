"""Watching the serving view while a design runs: what a reader saw, and when.

Every ``poll_s`` the watcher reads, through the design's serving view, the probe users'
cart lines (freshness) and the live windows of ``revenue_by_category`` (correctness over
time). The time recorded is when the answer came back: when a reader could see it.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from datetime import datetime

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from designs.platform import Platform

REVENUE = "revenue_by_category"


@dataclass
class Seen:
    """What the watcher observed."""

    probe_first_seen: dict[int, float] = field(default_factory=dict)  # user -> epoch s
    windows: list[tuple[float, dict[tuple, tuple]]] = field(default_factory=list)
    polls: int = 0
    poll_seconds: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


class Watcher:
    """A thread polling the serving view (use as a context manager)."""

    def __init__(
        self,
        spark: SparkSession,
        platform: Platform,
        probe_base: int,
        windows_from: datetime,
        poll_s: float = 1.0,
    ) -> None:
        self.spark, self.platform = spark, platform
        self.probe_base, self.windows_from, self.poll_s = probe_base, windows_from, poll_s
        self.seen = Seen()
        self._looks = 0  # polls attempted, failed ones included
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="lk-compare-watch", daemon=True)

    def poll(self) -> None:
        """One look at the serving view."""
        started = time.time()
        probes = (
            self.platform.read(self.spark, "cart_state")
            .where(F.col("user_id") >= self.probe_base)
            .select("user_id")
            .collect()
        )
        now = time.time()
        for row in probes:
            self.seen.probe_first_seen.setdefault(row.user_id, now)
        rows = (
            self.platform.read(self.spark, REVENUE)
            .where(F.col("window_start") >= F.lit(self.windows_from))
            .collect()
        )
        now = time.time()
        self.seen.windows.append(
            (now, {(r.window_start, r.category): (r.orders, str(r.revenue)) for r in rows})
        )
        self.seen.polls += 1
        self.seen.poll_seconds.append(now - started)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.poll()
            except Exception as error:  # a view not served yet, a table being replaced
                if len(self.seen.errors) < 20:
                    self.seen.errors.append(str(error).splitlines()[0][:300])
            self._looks += 1
            self._stop.wait(self.poll_s)

    def look_once_more(self, timeout_s: float = 600.0) -> None:
        """Return once a poll that began after this call has ended.

        A look at the serving view can take longer than the lane's last micro-batch
        (tens of seconds on a loaded machine): a fixed pause could end the watch before
        any look saw what the lane last wrote.
        """
        target = self._looks + 2  # the look in flight may have begun before this call
        deadline = time.monotonic() + timeout_s
        while self._looks < target and self._thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.1)

    def __enter__(self) -> Watcher:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=120)
