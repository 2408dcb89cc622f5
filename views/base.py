"""What a view is: a pure function over events plus the rule that merges its partial results.

A view's *state* rows are partial results that can be combined: ``merge(a ∪ b)`` equals
``compute(events_a ∪ events_b)`` whenever ``a = compute(events_a)`` and
``b = compute(events_b)`` for disjoint event sets. That one law lets the batch layer,
the speed layer and Kappa replay run the same code and still agree. ``present`` turns
merged state into the rows readers see (it drops internal ``_`` columns). The streaming
layers append each micro-batch's partial results to a state table, so readers combine
them with ``serve`` (merge, then present).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

from pyspark.sql import Column, DataFrame

from config.settings import ViewSettings


@dataclass(frozen=True)
class ViewContext:
    """What a view may read besides events: its settings and the catalog.

    ``catalog`` is the catalog table as it stands when the layer computes;
    ``catalog_versions`` every version the CDC topic holds, each with the time it became
    valid (``event_log.catalog.catalog_versions``), for joins as of the event's time.
    """

    settings: ViewSettings
    catalog: DataFrame | None = None
    catalog_versions: DataFrame | None = None


Compute = Callable[[DataFrame, ViewContext], DataFrame]
Totals = Callable[[DataFrame, ViewSettings], dict[str, Column]]
Merge = Callable[[DataFrame], DataFrame]
Present = Callable[[DataFrame], DataFrame]
Partners = Callable[[DataFrame, DataFrame, ViewSettings], DataFrame]
ContextKept = Callable[[DataFrame, ViewSettings, datetime | None], DataFrame]
Compaction = Literal["merge", "pack"]


def _human(value: object) -> str:
    """``timedelta(minutes=10)`` -> ``10 min``; anything else as ``str``."""
    from datetime import timedelta

    if isinstance(value, timedelta):
        seconds = value.total_seconds()
        for unit, size in (("h", 3600), ("min", 60), ("s", 1)):
            if seconds >= size and seconds % size == 0:
                return f"{int(seconds // size)} {unit}"
        return f"{seconds} s"
    return str(value)


def drop_internal(state: DataFrame) -> DataFrame:
    """Default presentation: every column except the internal ``_``-prefixed ones."""
    return state.select(*[c for c in state.columns if not c.startswith("_")])


@dataclass(frozen=True)
class View:
    """A named view: ``compute`` (events -> state), ``merge`` (state -> state), ``present``.

    Attributes:
        name: the name readers query it by.
        key: columns that identify one presented row.
        compute: pure function from decoded, de-duplicated events to state rows.
        merge: the merge rule; combines partial state rows for the same key.
        merge_rule: one sentence for humans: how partial results combine and whether the
            combination is exact.
        present: state -> presented rows.
        order_by: presentation order.
        context_lookback: for views that join events with earlier events (stream-stream
            joins): how far behind the watermark the streaming layers must keep events.
        partners: ``(own, earlier, settings) -> earlier events`` that can still join an
            event of ``own`` (a micro-batch's events): the streaming layers join a
            micro-batch with these only, not with everything of the look-back they
            retained. An earlier event it leaves out must change no result; without it,
            every earlier event of the look-back is context.
        context_kept: ``(events, settings, watermark) -> events``: of a lane's on-time
            events, the ones the join can still need once the view's watermark is
            ``watermark`` (None: none yet), and no more. The streaming layers keep only
            these for the join, in a part of the lane's log of their own, and apply it
            again to what they kept whenever they compact, so the join's context follows
            what it can still meet, not every event of the look-back. An event it leaves
            out must change no later result; ``context_kept(a ∪ b)`` must equal
            ``context_kept(context_kept(a) ∪ context_kept(b))`` in what it joins. Without
            it, every event of the look-back is kept.
        window: the window, for humans (``lk views``); ``{field}`` is replaced by that
            field of the view settings (``"tumbling {tumbling_window}"``).
        compaction: how a streaming lane keeps the view's appended state small.
            ``"merge"``: the rows appended since the last compaction are merged, one row
            per key again (a state that merging shrinks: counts, sums, a row per key).
            ``"pack"``: only the small files are packed into larger ones, rows unchanged,
            for a state of a row per event (a set), which merging hardly shrinks: merging
            rewrote every event of the last twenty minutes each time to drop a few copies.
            Readers merge either way, so the answers are the same.
        split_by: columns whose values split the view: ``merge`` combines only rows of
            one value of them, ``present`` turns each value's merged rows into presented
            rows of that value (which carry these columns as they are), and neither looks
            at another value's rows. A reader given a commit's new state rows then
            presents again only the values they hold (``lk serve``, whose reload after a
            lane commit would otherwise collect every row of the view). Empty: a view
            whose rows depend on others (a per-window count of per-purchase rows), which
            is presented again whole.

    """

    name: str
    key: tuple[str, ...]
    compute: Compute
    merge: Merge
    merge_rule: str
    present: Present = drop_internal
    order_by: tuple[str, ...] = ()
    context_lookback: Callable[[ViewSettings], timedelta] | None = None
    partners: Partners | None = None
    context_kept: ContextKept | None = None
    non_negative: tuple[str, ...] = ()
    totals: Totals | None = None
    settles_with: str | None = None
    window: str | None = None
    compaction: Compaction = "merge"
    split_by: tuple[str, ...] = ()

    @property
    def keeps_context(self) -> bool:
        """Whether a streaming lane keeps for this view's join only what it can still meet."""
        return self.context_lookback is not None and self.context_kept is not None

    def describe_window(self, settings: ViewSettings) -> str:
        """The window with the configured sizes filled in ("-" for an unwindowed view)."""
        if not self.window:
            return "-"
        values = {name: _human(getattr(settings, name)) for name in type(settings).model_fields}
        try:
            return self.window.format(**values)
        except (KeyError, IndexError, ValueError):
            return self.window

    def serve(self, state: DataFrame) -> DataFrame:
        """Presented rows over a state table that may hold several partial rows per key."""
        return self.present(self.merge(state))

    def evaluate(self, events: DataFrame, ctx: ViewContext) -> DataFrame:
        """Presented rows over ``events`` in one pass (what the batch layer publishes)."""
        return self.present(self.compute(events, ctx))
