"""What a lane's state is based on (an epoch): the designs say, the micro-batches follow.

Lambda opens a new epoch with every published batch run (its cutoff and batch views);
Kappa has one epoch and no base. The lane only asks for the current epoch between and
at the start of micro-batches, so the type lives apart from the processor.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pyspark.sql import DataFrame

from views.base import View


@dataclass(frozen=True)
class Epoch:
    """What the lane's state is based on.

    Attributes:
        id: ``kappa`` for a Kappa lane; for Lambda the batch run id (or ``initial``).
        cutoff: offsets below it belong to the base (the batch layer), not to the lane.
        base: the base state of a view (the batch view), or None.
        keeps_history: whether events at or after the cutoff must be retained for the
            next rebase (Lambda) or only as join context (Kappa).
    """

    id: str
    cutoff: dict[int, int]
    base: Callable[[View], DataFrame | None]
    keeps_history: bool
