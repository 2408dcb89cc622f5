"""A stopwatch for the phases of one operation: each lap ends one phase and starts the next.

A micro-batch (prepare, count, commit, maintain), a batch run (compute, validate,
publish) and a Kappa reprocess (replay, gate, switch) each report where their time went
with one of these.
"""

from __future__ import annotations

import time


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
