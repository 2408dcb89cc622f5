"""What a reader reads: the table of each serving view, as a design publishes it."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime


class ViewNotReadyError(RuntimeError):
    """Nothing has computed this view yet (no batch run, no streaming state)."""


@dataclass(frozen=True)
class ServingSource:
    """Where every serving view is read from, and why.

    Attributes:
        design: ``lambda`` or ``kappa``.
        description: what is served, for people (``batch run X + speed layer``).
        paths: view name -> the Delta table of its merged state.
        batch_paths: view name -> the batch run's table (Lambda), to tell final rows.
        clock: the streaming lane's event-time clock, if a lane is served.
        watched: tables whose commits are the only things that can change this source
            (a reader keeping a copy probes these before asking again).
    """

    design: str
    description: str
    paths: dict[str, str]
    batch_paths: dict[str, str] = field(default_factory=dict)
    clock: datetime | None = None
    watched: tuple[str, ...] = ()
