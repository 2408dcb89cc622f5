"""The views floor's join context: the look-back of earlier events, held in the session.

A view that joins a micro-batch's events with earlier ones (``conversions``: a purchase
and a page view of the same user and product up to an hour apart) is computed right
only with those earlier events; over the micro-batch alone it misses every partner in
an earlier micro-batch. A floor of "compute the views" has to pay for that context
too, or it is a floor of something cheaper than the contract. It holds them the least
any design can: in the session's block store (:mod:`lake.kept`), nothing written,
nothing to recover after a crash, and per micro-batch it keeps only what the view's
``partners`` says can still meet the micro-batch's events, as a lane does
(:func:`speed_layer.view_input.view_input`).

The micro-batches are held as they came, gathered every :data:`GATHER_EVERY` into one
piece (a union of a thousand small pieces costs the planner more than their rows), and
dropped once the clock (the newest event time read) has passed their newest event by
the longest look-back and lateness of the joining views.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import reduce

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from config.settings import ViewSettings
from lake.kept import kept, released
from speed_layer.view_input import CONTEXT_STEP
from views.base import View
from views.registry import ViewRegistry
from views.windows import floor_to

#: micro-batches held apart before they are gathered into one piece
GATHER_EVERY = 30


@dataclass
class _Piece:
    frame: DataFrame
    newest: datetime | None


class HeldContext:
    """The earlier events a joining view of ``registry`` can still meet, held in memory."""

    def __init__(self, registry: ViewRegistry, settings: ViewSettings) -> None:
        self.settings = settings
        self.time = registry.contract.time_field
        self.reach = max(
            (
                lookback(settings) + settings.lateness(v.name)
                for v in registry
                if (lookback := v.context_lookback) is not None
            ),
            default=None,
        )
        #: the clock: the minimum over partitions of each one's newest event time, as a
        #: lane's (a partition read further ahead makes no other's partners look old)
        self.clock: datetime | None = None
        self._clocks: dict[int, datetime] = {}
        self._gathered: list[_Piece] = []
        self._recent: list[_Piece] = []

    def earlier(self) -> DataFrame | None:
        """Every held event (None before the first micro-batch, or with no joining view)."""
        pieces = [p.frame for p in self._gathered + self._recent]
        return reduce(DataFrame.unionByName, pieces) if pieces else None

    def view_input(self, view: View, own: DataFrame, held: list[DataFrame]) -> DataFrame:
        """``own`` and, for a joining view, the held events its ``partners`` keeps, cached.

        The context reaches back the view's look-back and lateness behind the clock, as a
        lane's reaches behind its watermark; ``held`` takes the cached partners, which the
        caller releases after its commit.
        """
        earlier = self.earlier()
        if view.context_lookback is None or earlier is None or self.clock is None:
            return own
        lateness = self.settings.lateness(view.name)
        since = self.clock - lateness - view.context_lookback(self.settings)
        # rounded down as a lane rounds it: a literal that changed every micro-batch made
        # Spark compile every stage again (speed_layer.view_input)
        context = earlier.where(F.col(self.time) >= F.lit(floor_to(since, CONTEXT_STEP)))
        if view.partners is not None:
            context = view.partners(own, context, self.settings)
        context = context.select(*own.columns).persist()
        held.append(context)
        return own.unionByName(context)

    def add(self, batch: DataFrame) -> bool:
        """Hold a micro-batch's (kept) events; returns whether they were held.

        Not held (the caller releases them) when no view joins. Moves the clock, drops
        what it has passed by the reach, and gathers the recent pieces when due.
        """
        if self.reach is None:
            return False
        rows = batch.groupBy("partition").agg(F.max(self.time).alias("newest")).collect()
        for row in rows:
            if row.newest is not None:
                before = self._clocks.get(row.partition, row.newest)
                self._clocks[row.partition] = max(before, row.newest)
        if self._clocks:
            self.clock = min(self._clocks.values())
        newest = max((r.newest for r in rows if r.newest is not None), default=None)
        self._recent.append(_Piece(batch, newest))
        if len(self._recent) >= GATHER_EVERY:
            self._gather()
        self._drop_passed()
        return True

    def _gather(self) -> None:
        pieces = self._recent
        union = reduce(DataFrame.unionByName, [p.frame for p in pieces])
        newest = max((p.newest for p in pieces if p.newest is not None), default=None)
        self._gathered.append(_Piece(kept(union.coalesce(1)), newest))
        for piece in pieces:
            released(piece.frame)
        self._recent = []

    def _drop_passed(self) -> None:
        if self.clock is None or self.reach is None:
            return
        bound = self.clock - self.reach - timedelta(minutes=5)
        for pieces in (self._gathered, self._recent):
            for piece in [p for p in pieces if p.newest is not None and p.newest < bound]:
                released(piece.frame)
                pieces.remove(piece)

    def release(self) -> None:
        """Free every held piece."""
        for piece in self._gathered + self._recent:
            released(piece.frame)
        self._gathered, self._recent = [], []
