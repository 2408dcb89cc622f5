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

The micro-batches are held as they came (the batch the floor keeps anyway, at no cost
of its own), and every :data:`GATHER_EVERY` each joining view gathers them with what it
gathered before into one piece: the view's ``context_kept`` of them (``conversions``: at
most two page views per user, product and step of its look-back, and the purchases a
page view still to come can meet), less what is older than a lane's keep-back behind
the clock (the newest event time read). A lane keeps its context by the same rule at
each compaction (:func:`speed_layer.maintenance.contexts`), so the floor's join reads
no more than a lane's: holding every event of the look-back, it would pay more than the
design it bounds.
"""

from __future__ import annotations

from datetime import datetime
from functools import reduce

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from config.settings import ViewSettings
from lake.kept import kept, released
from speed_layer.maintenance import keep_back
from speed_layer.view_input import CONTEXT_STEP
from views.base import View
from views.registry import ViewRegistry
from views.windows import floor_to

#: micro-batches held apart before they are gathered (a lane's ``stream.compact_every``,
#: when it keeps its context again by the same rule)
GATHER_EVERY = 10


class HeldContext:
    """The earlier events each joining view of ``registry`` can still meet, held in memory."""

    def __init__(self, registry: ViewRegistry, settings: ViewSettings) -> None:
        self.settings = settings
        self.time = registry.contract.time_field
        self.joins = [v for v in registry if v.context_lookback is not None]
        #: how far behind the clock a join can still reach, as a lane's log keeps
        self.keep_back = keep_back(settings, registry)
        #: the clock: the minimum over partitions of each one's newest event time, as a
        #: lane's (a partition read further ahead makes no other's partners look old)
        self.clock: datetime | None = None
        self._clocks: dict[int, datetime] = {}
        self._gathered: dict[str, DataFrame] = {}  # per joining view, its last gathering
        self._recent: list[DataFrame] = []  # the micro-batches since, held by every join

    def earlier(self, view: View) -> DataFrame | None:
        """Every event held for ``view`` (None before a first micro-batch, or if it joins none)."""
        if view.context_lookback is None:
            return None
        gathered = self._gathered.get(view.name)
        pieces = ([] if gathered is None else [gathered]) + self._recent
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

        Not held (the caller releases them) when no view joins; held, they are released
        here once gathered. Moves the clock, and gathers when due.
        """
        if not self.joins:
            return False
        rows = batch.groupBy("partition").agg(F.max(self.time).alias("newest")).collect()
        for row in rows:
            if row.newest is not None:
                before = self._clocks.get(row.partition, row.newest)
                self._clocks[row.partition] = max(before, row.newest)
        if self._clocks:
            self.clock = min(self._clocks.values())
        self._recent.append(batch)
        if len(self._recent) >= GATHER_EVERY:
            self._gather()
        return True

    def _gather(self) -> None:
        """Each join's pieces as one: its ``context_kept`` of them, within the keep-back."""
        before = list(self._gathered.values()) + self._recent
        for view in self.joins:
            rows = self.earlier(view)
            if rows is None:
                continue
            watermark = None
            if self.clock is not None:
                rows = rows.where(F.col(self.time) >= F.lit(self.clock - self.keep_back))
                watermark = self.clock - self.settings.lateness(view.name)
            if view.context_kept is not None:
                rows = view.context_kept(rows, self.settings, watermark)
            self._gathered[view.name] = kept(rows.coalesce(1))
        self._recent = []
        for piece in before:
            released(piece)

    def release(self) -> None:
        """Free every held piece."""
        for piece in list(self._gathered.values()) + self._recent:
            released(piece)
        self._gathered, self._recent = {}, []
