"""Watching your own views while a design runs: when each probe's row became visible.

A probe (:mod:`compare.own_files`) has a marker (``lk-probe-N``) in a field a view is
keyed by, so it has a row of its own there. Every ``poll_s`` the watcher reads, through
the design's serving view, the rows whose marker column starts with the marker prefix;
the time recorded is when the answer came back.
"""

from __future__ import annotations

import threading
import time

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from compare.own_files import PROBE
from compare.watch import Seen
from designs.platform import Platform


class ProbeWatcher:
    """A thread polling one view for probe rows (use as a context manager)."""

    def __init__(
        self, spark: SparkSession, platform: Platform, view: str, marker: str, poll_s: float = 1.0
    ) -> None:
        self.spark, self.platform = spark, platform
        self.view, self.marker, self.poll_s = view, marker, poll_s
        self.seen = Seen()
        self._looks = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="lk-compare-watch", daemon=True)

    def poll(self) -> None:
        """One look at the serving view."""
        started = time.time()
        rows = (
            self.platform.read(self.spark, self.view)
            .where(F.col(self.marker).startswith(PROBE))
            .select(self.marker)
            .distinct()
            .collect()
        )
        now = time.time()
        for row in rows:
            self.seen.probe_first_seen.setdefault(int(row[0].removeprefix(PROBE)), now)
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
        """Return once a poll that began after this call has ended."""
        target = self._looks + 2
        deadline = time.monotonic() + timeout_s
        while self._looks < target and self._thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.1)

    def __enter__(self) -> ProbeWatcher:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=120)
