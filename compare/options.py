"""What one comparison runs: the workload, the live phase, the logic change, the repeats."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

DESIGNS = ("lambda", "kappa")


class CompareOptions(BaseModel):
    """Every knob of ``lk compare`` (frozen: it is written into ``results.json``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    events: int = Field(
        20_000, ge=100, description="history: events in the log before the live phase"
    )
    seed: int = 42
    rate: float = Field(200.0, gt=0, description="live phase: events/s from the generator")
    live_seconds: float = Field(60.0, gt=0)
    users: int = Field(200, ge=1)
    products: int = Field(100, ge=1)
    history_span: timedelta = timedelta(hours=2)
    late_fraction: float = Field(0.02, ge=0, le=1, description="history and live phase")
    live_max_lateness_s: float = Field(900.0, gt=0)
    probe_every: int = Field(20, ge=1)
    change: dict[str, Any] = Field(default_factory=lambda: {"tumbling_window": "5 minutes"})
    lateness_values: tuple[str, ...] = ("1 minute", "5 minutes", "10 minutes", "30 minutes")
    repeat: int = Field(1, ge=1)
    sustainable: bool = False
    sustainable_start: int = Field(2_000, ge=100, description="first rate of the search")
    sustainable_trials: int = Field(4, ge=1)
    sustainable_warm_up_s: float = Field(60.0, ge=0)
    sustainable_seconds: float = Field(300.0, gt=0, description="measured part of a trial")
    scaling: tuple[int, ...] = ()
    floor: bool = Field(
        True,
        description="also run the views floor over the same workload (the shop's; not your "
        "own files), each design's freshness reported as a multiple of it",
    )
    warmup_s: float = Field(
        10.0, ge=0, description="live probes due in the first seconds are discarded"
    )
    poll_s: float = Field(1.0, gt=0)
    max_schedule_lag_s: float = 1.0
    order: tuple[str, ...] = DESIGNS
    # your own events (``--history``): files replayed through the configured contract
    history: Path | None = Field(None, description="history file (None: the shop generator)")
    live: Path | None = Field(None, description="live file (None: the tail of the history)")
    live_fraction: float = Field(
        0.25, gt=0, lt=1, description="without a live file: the share of the history's rows "
        "(its last ones, in file order) replayed live"
    )  # fmt: skip
    counts: dict[str, str] = Field(
        default_factory=dict, description="view -> column counting its events (per window)"
    )

    @property
    def own_data(self) -> bool:
        """Whether the comparison runs on your files and views, not the shop generator."""
        return self.history is not None

    def seeds(self) -> list[int]:
        """The seeds of the repeats: ``seed, seed+1, ...``."""
        return [self.seed + i for i in range(self.repeat)]
