"""Stopwatches: the phases of one operation, and the median of a repeated one.

A micro-batch (prepare, count, commit, maintain), a batch run (compute, validate,
publish) and a Kappa reprocess (replay, gate, switch) each report where their time went
with :class:`Laps`; the benchmarks that repeat one action time it with :func:`median_run`.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def median_run(run: Callable[[], T], repeat: int, *, warm_up: bool = False) -> tuple[float, T]:
    """Median wall seconds of ``repeat`` runs of ``run`` and the last run's result.

    ``warm_up``: one run first, not timed (what a fresh plan or JVM costs once).
    """
    if warm_up:
        run()
    seconds = []
    for _ in range(repeat):
        started = time.perf_counter()
        result = run()
        seconds.append(time.perf_counter() - started)
    return statistics.median(seconds), result


class Laps:
    """Milliseconds spent in each phase, phase after phase."""

    def __init__(self) -> None:
        self._at = time.perf_counter()
        self.ms: dict[str, int] = {}

    def __call__(self, phase: str) -> None:
        """End ``phase`` now (the next one starts)."""
        now = time.perf_counter()
        self.ms[phase] = round((now - self._at) * 1000)
        self._at = now

    def seconds(self) -> dict[str, float]:
        """Each phase so far in seconds, to a tenth."""
        return {phase: round(ms / 1000, 1) for phase, ms in self.ms.items()}
