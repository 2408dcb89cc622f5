"""The readings over time, in memory: what the page's time axis shows.

A reading only says what is true now (the lag at this moment, the last 30 micro-batches);
the history keeps each design's lag series and every micro-batch and mark seen since the
page started, so the charts grow as events arrive.
"""

from __future__ import annotations

import threading
from collections import deque
from typing import Any

#: Lag readings kept per design (at one reading every few seconds: hours).
KEEP = 5_000


class History:
    """Per design: the newest reading, the lag series, micro-batches and marks by id."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._latest: dict[str, dict[str, Any]] = {}
        self._lag: dict[str, deque[dict[str, Any]]] = {}
        self._batches: dict[str, dict[tuple[str, int], dict[str, Any]]] = {}
        self._marks: dict[str, dict[tuple[str, float], dict[str, Any]]] = {}
        self.errors: dict[str, str] = {}

    def add(self, reading: dict[str, Any]) -> None:
        """Fold one reading in."""
        label = reading["label"]
        with self._lock:
            self._latest[label] = reading
            self.errors.pop(label, None)
            lag = self._lag.setdefault(label, deque(maxlen=KEEP))
            lag.append(
                {
                    "at": reading["at"],
                    "lanes": {
                        lane["name"]: {"lag": lane["lag"], "total": lane["total_lag"]}
                        for lane in reading["lanes"]
                    },
                }
            )
            batches = self._batches.setdefault(label, {})
            for lane in reading["lanes"]:
                for b in lane["micro_batches"]:
                    batches[(lane["name"], b["batch_id"])] = {**b, "lane": lane["name"]}
            marks = self._marks.setdefault(label, {})
            for m in reading["marks"]:
                marks[(m["label"], m["at"])] = m

    def failed(self, label: str, reason: str) -> None:
        """A reading of ``label`` could not be taken at all."""
        with self._lock:
            self.errors[label] = reason

    def state(self) -> dict[str, Any]:
        """What ``/api/state`` answers: per design, its newest reading and its series."""
        with self._lock:
            out = []
            for label, latest in self._latest.items():
                batches = sorted(self._batches[label].values(), key=lambda b: b["finished"] or 0)
                out.append(
                    {
                        **latest,
                        "lag_series": list(self._lag[label]),
                        "micro_batches": batches,
                        "marks": sorted(self._marks[label].values(), key=lambda m: m["at"]),
                        "error": self.errors.get(label),
                    }
                )
            missing = [
                {"label": label, "error": reason}
                for label, reason in self.errors.items()
                if label not in self._latest
            ]
            return {"designs": out, "unread": missing}
