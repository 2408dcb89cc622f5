"""The views floor's join context: what a joining view can still meet, held in the session.

A view that joins a micro-batch's events with earlier ones (``conversions``: a purchase
and a page view of the same user and product up to an hour apart) is computed right
only with those earlier events; over the micro-batch alone it misses every partner in
an earlier micro-batch. A floor of "compute the views" has to pay for that context
too, or it is a floor of something cheaper than the contract. It holds them the least
any design can: in the session's block store (:mod:`lake.kept`), nothing written,
nothing to recover after a crash, and per micro-batch it keeps only what the view's
``partners`` says can still meet the micro-batch's events, as a lane does
(:func:`speed_layer.view_input.view_input`).

Each joining view holds the micro-batches as they came (the batch the floor keeps
anyway, at no cost of its own), and every :data:`GATHER_EVERY` gathers them with what
it held before into one piece: the view's ``context_kept`` of them (``conversions``: at
most two page views per user, product and step of its look-back, and the purchases a
page view still to come can meet), less what the clock (the newest event time read)
has passed by the view's look-back and lateness. A lane keeps its context by the same
rule at each compaction (:func:`speed_layer.maintenance.contexts`), so the floor's join
reads no more than a lane's. Before 2026-12-03 the floor held every event of the
look-back, and at 5,000 events/s its join read millions of events a lane's rule leaves
out: a floor paying more than the design it bounds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
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

#: micro-batches held apart before they are gathered into one piece (a lane's
#: ``stream.compact_every``, when it keeps its context again by the same rule)
GATHER_EVERY = 10
#: how far past a view's look-back and lateness the held events reach (a lane's margin)
MARGIN = timedelta(minutes=5)


@dataclass
class _Held:
    """One joining view's events: the piece gathered last, and the micro-batches since."""

    view: View
    gathered: DataFrame | None = None
    recent: list[DataFrame] = field(default_factory=list)

    def pieces(self) -> list[DataFrame]:
        return ([] if self.gathered is None else [self.gathered]) + self.recent


class HeldContext:
    """The earlier events each joining view of ``registry`` can still meet, held in memory."""

    def __init__(self, registry: ViewRegistry, settings: ViewSettings) -> None:
        self.settings = settings
        self.time = registry.contract.time_field
        self._held = {v.name: _Held(v) for v in registry if v.context_lookback is not None}
        #: the clock: the minimum over partitions of each one's newest event time, as a
        #: lane's (a partition read further ahead makes no other's partners look old)
        self.clock: datetime | None = None
        self._clocks: dict[int, datetime] = {}

    def earlier(self, view: View) -> DataFrame | None:
        """Every event held for ``view`` (None before a first micro-batch, or if it joins none)."""
        held = self._held.get(view.name)
        pieces = [] if held is None else held.pieces()
        return reduce(DataFrame.unionByName, pieces) if pieces else None

    def view_input(self, view: View, own: DataFrame, held: list[DataFrame]) -> DataFrame:
        """``own`` and, for a joining view, the held events its ``partners`` keeps, cached.

        The context reaches back the view's look-back and lateness behind the clock, as a
        lane's reaches behind its watermark; ``held`` takes the cached partners, which the
        caller releases after its commit.
        """
        earlier = self.earlier(view)
        if view.context_lookback is None or earlier is None or self.clock is None:
            return own
        reach = view.context_lookback(self.settings) + self.settings.lateness(view.name)
        since = self.clock - reach
        # rounded down as a lane rounds it: a literal that changed every micro-batch made
        # Spark compile every stage again (speed_layer.view_input)
        context = earlier.where(F.col(self.time) >= F.lit(floor_to(since, CONTEXT_STEP)))
        if view.partners is not None:
            context = view.partners(own, context, self.settings)
        context = context.select(*own.columns).persist()
        held.append(context)
        return own.unionByName(context)

    def add(self, batch: DataFrame) -> bool:
        """Hold a micro-batch's (kept) events for each joining view; returns whether held.

        Not held (the caller releases them) when no view joins; held, they are released
        here once gathered. Moves the clock, and gathers each view's pieces when due.
        """
        if not self._held:
            return False
        rows = batch.groupBy("partition").agg(F.max(self.time).alias("newest")).collect()
        for row in rows:
            if row.newest is not None:
                before = self._clocks.get(row.partition, row.newest)
                self._clocks[row.partition] = max(before, row.newest)
        if self._clocks:
            self.clock = min(self._clocks.values())
        for held in self._held.values():
            held.recent.append(batch)
        if len(next(iter(self._held.values())).recent) >= GATHER_EVERY:
            self._gather()
        return True

    def _gather(self) -> None:
        """Each view's pieces as one: its ``context_kept`` of them, less what the clock passed."""
        old = {id(p): p for held in self._held.values() for p in held.pieces()}
        for held in self._held.values():
            view = held.view
            rows = reduce(DataFrame.unionByName, held.pieces())
            watermark = None
            if self.clock is not None and view.context_lookback is not None:
                reach = view.context_lookback(self.settings) + self.settings.lateness(view.name)
                rows = rows.where(F.col(self.time) >= F.lit(self.clock - reach - MARGIN))
                watermark = self.clock - self.settings.lateness(view.name)
            if view.context_kept is not None:
                rows = view.context_kept(rows, self.settings, watermark)
            held.gathered, held.recent = kept(rows.coalesce(1)), []
        for piece in old.values():  # a batch several views held is released once
            released(piece)

    def release(self) -> None:
        """Free every held piece."""
        pieces = {id(p): p for held in self._held.values() for p in held.pieces()}
        for piece in pieces.values():
            released(piece)
        for held in self._held.values():
            held.gathered, held.recent = None, []
