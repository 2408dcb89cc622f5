"""Every few micro-batches, a lane's log is tidied: the state merged, old retained events dropped.

Readers see the same rows before and after: the merge rule is applied to the state on
read anyway, and the dropped events are older than anything a rebase or a join can
still need. Kept apart from the micro-batch because it never changes what one computes,
only what the log costs to read and to keep.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from config.settings import Settings, ViewSettings
from lake import storage
from lake.offsets import below
from speed_layer import lane_log
from speed_layer.epoch import Epoch
from speed_layer.join_context import ContextPart, kept_for_join
from speed_layer.lane import Lane
from views.registry import ViewRegistry
from views.windows import floor_to

PRUNE_EVERY = 20
REGION_STEP = timedelta(minutes=10)
"""What a compaction's region starts on: a whole step of the views' key time, so that the
rows it leaves behind when the step moves on are written once, to one file per view
(six an hour), and never read by a compaction again."""


@dataclass(frozen=True)
class Upkeep:
    """What this process's maintenance of a lane's log has done so far.

    Attributes:
        compacted: the log's version after the last compaction (None: none yet).
        gathered: the retained events before this time are gathered in a file per
            :data:`REGION_STEP` of their time (None: none gathered yet).
    """

    compacted: int | None = None
    gathered: datetime | None = None


def maintain(
    spark: SparkSession,
    settings: Settings,
    lane: Lane,
    registry: ViewRegistry,
    epoch: Epoch,
    batch_id: int,
    clock: datetime | None,
    done: Upkeep = Upkeep(),
    lap: Callable[[str], None] = lambda _phase: None,
    parts: Mapping[str, ContextPart] | None = None,
) -> Upkeep:
    """After micro-batch ``batch_id``: compact, prune and tidy the lane's log, when due.

    Every ``stream.compact_every`` micro-batches the views' state is merged, and each
    join's context reduced to what it can still meet (:func:`contexts`), in one
    commit (:func:`compact`), and the files of the views that compact by packing are
    packed in another (:func:`pack`). Every :data:`PRUNE_EVERY`, once the lane has an
    event-time ``clock``, the retained rows past the keep-back are deleted, and Delta
    rewrites only the files its statistics say may hold such rows (one commit, or none
    while nothing is that old, as in a live lane's first hour); then the retained
    events of the steps of time that closed since are gathered (:func:`gather`). Every
    ``stream.tidy_every``, the append-only parts' small files are merged and the files
    no recent version needs are deleted.

    ``done``: what this process's maintenance did before; returned as it stands after.
    ``lap``: told the end of each step that ran (``compact``, ``pack``, ``prune``,
    ``gather``, ``tidy``), for the micro-batch's phase timings. ``parts``: the context
    part each join reads (the micro-batch's progress row).
    """
    if batch_id > 0 and batch_id % settings.stream.compact_every == 0:
        joins = contexts(spark, settings, lane, registry, clock, parts or {})
        done = replace(done, compacted=compact(spark, lane, registry, epoch, done.compacted, joins))
        lap("compact")
        pack(spark, lane, registry, epoch)
        lap("pack")
    if batch_id > 0 and batch_id % PRUNE_EVERY == 0 and clock is not None:
        # on a step's start: the prune drops gathered files whole, never splits one
        horizon = floor_to(clock - keep_back(settings.views, registry), REGION_STEP)
        old = prunable(
            epoch, registry.contract.time_field, F.lit(horizon), prefix=f"{lane_log.RETAINED}."
        )
        lane_log.delete(spark, lane, lane_log.RETAINED, old)
        lap("prune")
        if (lateness := join_lateness(settings.views, registry)) is not None:
            closed = floor_to(clock - lateness, REGION_STEP)
            # a process's first gathering takes the last closed step alone (the steps a
            # restart skipped keep their files until they are pruned)
            since = closed - REGION_STEP if done.gathered is None else done.gathered
            time = f"{lane_log.RETAINED}.{registry.contract.time_field}"
            gathered = gather(spark, lane, time, max(since, horizon), closed)
            done = replace(done, gathered=gathered)
            lap("gather")
    if batch_id > 0 and batch_id % settings.stream.tidy_every == 0:
        lane_log.merge_small_files(spark, lane, lane_log.APPEND_ONLY)
        lane_log.vacuum(spark, lane)
        lap("tidy")
    return done


def gather(
    spark: SparkSession, lane: Lane, column: str, since: datetime, closed: datetime
) -> datetime:
    """Gather the retained events of each step of time from ``since`` to ``closed``.

    A micro-batch appends its events to the retained part in a file of its own, and
    each micro-batch's join context reads every file of the look-back: at 1,000
    events/s, a thousand files an hour. Each step of :data:`REGION_STEP` whose end the
    clock has passed by the join views' lateness (``closed``) is rewritten as one file
    (:func:`lane_log.gather`), once: the events of a step that arrive after it was
    gathered stay in their micro-batches' files. Same rows: a join, a rebase and a
    prune read the same events before and after. ``since`` and ``closed`` fall on
    steps. Returns where the next gathering starts.
    """
    start = since
    while start < closed:
        lane_log.gather(spark, lane, lane_log.RETAINED, column, start, start + REGION_STEP)
        start += REGION_STEP
    return start


def contexts(
    spark: SparkSession,
    settings: Settings,
    lane: Lane,
    registry: ViewRegistry,
    clock: datetime | None,
    parts: Mapping[str, ContextPart],
) -> list[tuple[str, DataFrame]]:
    """Each join's context part again: the view's ``context_kept`` of what it holds.

    A micro-batch appends what its own events leave for the join; the view's rule over
    all of them keeps fewer (``conversions``: two page views per user, product and hour
    however many micro-batches wrote one), and the events older than the keep-back
    (:func:`keep_back`) go. So the context the next micro-batches read stays the size
    of what can still be met, not of the look-back's events. ``parts``: the part each
    join reads (:class:`ContextPart`); its rows replace every context part of the view,
    so a part seeded before the settings changed goes too. Returns ``(region, rows)``
    for :func:`compact`'s commit; none for a join with no part kept by these settings.
    """
    found: list[tuple[str, DataFrame]] = []
    time = registry.contract.time_field
    for view in (v for v in registry if v.keeps_context):
        claim = parts.get(view.name)
        if claim is None or not claim.kept_by(settings.views):
            continue
        held = lane_log.read(spark, lane, claim.part, column=lane_log.CONTEXT)
        if held is None:
            continue
        watermark = None
        if clock is not None:
            held = held.where(F.col(time) >= F.lit(clock - keep_back(settings.views, registry)))
            watermark = clock - settings.views.lateness(view.name)
        kept = kept_for_join(view, held, watermark, settings.views)
        found.append((lane_log.context_parts(view.name), lane_log.context_rows(claim.part, kept)))
    return found


def compact(
    spark: SparkSession,
    lane: Lane,
    registry: ViewRegistry,
    epoch: Epoch,
    since: int | None,
    also: list[tuple[str, DataFrame]] | None = None,
) -> int | None:
    """Merge the views' state rows that commits since version ``since`` could change.

    A view's rows are merged from the start of its :func:`region`, the earliest key
    time of the rows appended since, rounded down to :data:`REGION_STEP`; every row
    of a key appended to has that key's time, so every such key ends with one row,
    and the keys before are left as the last compaction merged them. The cost and the
    copies follow what was appended since, not the history the view covers. A view
    nothing was appended to is left alone; one whose region is unknown (no ``since``,
    a commit other than an append since, a key with no time, no statistics) is merged
    whole. A view that compacts by packing (``View.compaction``: a state of a row per
    event, which merging hardly shrinks) is left to :func:`pack`. Readers see the same
    answers before and after (the merge rule is applied on read anyway): the commit is
    noted so (:data:`lake.storage.SAME_ANSWERS`), and a
    reader that merges may skip it. ``also``: more ``(region, rows)`` to replace in
    the same commit (:func:`contexts`). Returns the version of the log after it.
    """
    until = lane_log.version(spark, lane)
    if until is None:
        return since
    if since is not None and since > until:
        since = None  # the log was written again from version 0 (a first micro-batch's recovery)
    regions = [region for region, _ in also or []]
    pieces = [rows for _, rows in also or []]
    for view in registry:
        if view.compaction == "pack":
            continue
        part = lane_log.state_part(epoch.id, view.name)
        state = lane_log.state_table(lane, epoch.id, view.name).read(spark, until)
        column = lane_log.time_key(state.schema, view.key)
        added = (
            None
            if since is None
            else storage.appended(spark, lane.log, since, until, {lane_log.PART: part})
        )
        if added == []:
            continue
        start = region(added, None if column is None else f"{view.name}.{column}")
        if start is None:
            regions.append(lane_log.whole(part))
        else:
            regions.append(lane_log.from_time(part, f"{view.name}.{column}", start))
            state = state.where(F.col(f"`{column}`") >= F.lit(start))
        pieces.append(lane_log.state_rows(epoch.id, view.name, view.merge(state)))
    if not pieces:
        return until
    lane_log.replace(spark, lane, regions, pieces, note=storage.SAME_ANSWERS)
    return lane_log.version(spark, lane)


def pack(spark: SparkSession, lane: Lane, registry: ViewRegistry, epoch: Epoch) -> None:
    """Pack the small files of the views that compact by packing, their rows unchanged.

    One commit that changes no data (Delta's OPTIMIZE, :func:`lane_log.merge_small_files`):
    each row is rewritten once, when its small file is packed. At 5,000 events/s such a
    state (a row per event) grows by a file per micro-batch, and merging it (a
    compaction) rewrote the events of twenty minutes each time to drop a few copies.
    It runs before the next micro-batch, as the compaction does, though it conflicts
    with no append: beside it, its seconds-long tasks held both cores while the
    micro-batch waited (Spark pre-empts no task; docs/architecture.md, "A state of a row
    per event is packed, not merged").
    """
    parts = [lane_log.state_part(epoch.id, v.name) for v in registry if v.compaction == "pack"]
    if parts:
        lane_log.merge_small_files(spark, lane, parts)


def region(
    added: list[dict[str, Any]] | None, column: str | None, step: timedelta = REGION_STEP
) -> datetime | None:
    """Where a compaction of a view's state starts: None for the whole state.

    ``added``: the ``add`` actions of the files appended to its part since the last
    compaction (None: not known); ``column``: its time key (``view.field``), if any.
    """
    if added is None or column is None:
        return None
    earliest = storage.earliest(added, column)
    return None if earliest is None else floor_to(earliest, step)


def join_lateness(settings: ViewSettings, registry: ViewRegistry) -> timedelta | None:
    """The longest a view that joins earlier events waits for a late one; None: none joins.

    Only a join's context reads the retained events every micro-batch (a rebase reads
    them once), so only such views decide when a step of them is gathered.
    """
    joins = [settings.lateness(v.name) for v in registry if v.context_lookback is not None]
    return max(joins, default=None)


def keep_back(settings: ViewSettings, registry: ViewRegistry) -> timedelta:
    """How far behind the clock a rebase or a join context can still reach."""
    views = list(registry)
    return max(
        [settings.lateness(v.name) for v in views]
        + [
            v.context_lookback(settings) + settings.lateness(v.name)
            for v in views
            if v.context_lookback is not None
        ]
    ) + timedelta(minutes=5)


def prunable(epoch: Epoch, time: str, since: Column, prefix: str = "") -> Column:
    """Retained events no rebase and no join context can need any more.

    Applied when events are first retained, too: a replay's micro-batch of a day of
    history keeps only its last hour or so, instead of writing every event to be
    pruned later. ``time``: the event-time field; ``prefix``: where the event's fields
    are (``retained.`` in the log).
    """
    old = F.col(f"{prefix}{time}") < since
    return (below(epoch.cutoff, prefix) & old) if epoch.keeps_history else old
