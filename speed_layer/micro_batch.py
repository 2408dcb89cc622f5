"""One micro-batch of the streaming layers: the same view code, applied incrementally.

For every micro-batch ``[a, b)`` (already decoded and de-duplicated upstream):

1. one pass over the batch counts rows, malformed rows, late rows per view and each
   partition's newest event time, and caches the batch with each event's lateness; it
   runs on a thread of its own while the views' plans, their context and an epoch's
   opening state are built (0.7 s of Python and Spark's analyser when an epoch opens,
   a third of a second otherwise), since nothing in those depends on the counts;
2. events below the epoch's cutoff are skipped (the batch layer owns them);
3. per view, events older than the view's watermark are late: kept as ``late`` rows and
   left out of that view, never silently. The watermark is the lane's event-time clock
   after the earlier micro-batches, minus the view's allowed lateness; the clock is the
   *minimum over partitions* of each partition's maximum event time, so a partition that
   a bounded micro-batch carried further ahead in event time does not make a slower
   partition's on-time events look late;
4. per view, ``contribution = view.compute(events)`` is *appended* to the view's state.
   The state is a set of partial results that readers combine with the view's merge
   rule (:meth:`views.base.View.serve`), so a micro-batch costs what its own events
   cost, not what the state holds. A micro-batch that opens an epoch computes its
   events within the epoch's opening state instead, one pass per view
   (:meth:`MicroBatchProcessor._epoch_state`);
5. the contributions, the late events, the malformed records, the retained events, what
   each join keeps of them (``View.context_kept``: its context in later micro-batches,
   instead of every retained event of its look-back) and the progress row go to the
   lane's log in **one** Delta commit
   (:mod:`speed_layer.lane_log`): the micro-batch happened as a whole or not at all.
   Every ``stream.compact_every`` micro-batches one more commit merges what was
   appended since the last one (one row per key again; a state of a row per event has
   its small files packed instead), and every ``PRUNE_EVERY`` a delete drops the
   retained events nothing can need any more and each ten minutes of them the clock has
   passed is gathered into one file (:mod:`speed_layer.maintenance`).

A micro-batch Spark never recorded as committed is undone by restoring the log before a
restart (:mod:`speed_layer.recovery`) and recomputed from the same inputs:
exactly-once results, with nothing to check on the normal path.

What changes from one micro-batch to the next (its id, the watermarks) enters the plans
as *data*, a one-row table joined in (:func:`speed_layer.watermarks.parameters`), and the
earlier retained events are read at the Delta version recorded before the batch, not
filtered by id. Spark writes literal numbers and timestamps into the code it generates,
so a literal that changed every micro-batch made Spark compile every stage again; as
data, the plans stay the same from batch to batch and Spark's code cache serves them.
Two bounds stay literals on purpose, because they let Delta skip old files: the join
context's, rounded down to ``CONTEXT_STEP`` so it changes every few minutes of event
time, not every micro-batch (:mod:`speed_layer.view_input`), and the pruning delete's
(every ``PRUNE_EVERY`` micro-batches).

This module holds the processor, the order of the steps; what a step decides is in a
module of its own: the epoch (:mod:`speed_layer.epoch`), lateness
(:mod:`speed_layer.watermarks`), a view's input (:mod:`speed_layer.view_input`), the
log's upkeep (:mod:`speed_layer.maintenance`), the cache plumbing
(:mod:`speed_layer.jobs`; the counting pass's thread, :mod:`lake.threads`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from functools import partial

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from config.settings import Settings
from event_log.catalog import read_catalog, read_catalog_versions
from event_log.decode import event_columns, event_schema, quarantined
from event_log.topics import EndOffsets
from lake import quarantine
from lake.inline import one_row
from lake.offsets import below, reaches
from lake.threads import in_background
from measure.laps import Laps
from speed_layer import lane_log, progress
from speed_layer.checkpoint import committed_offsets, offsets_read
from speed_layer.epoch import Epoch
from speed_layer.jobs import release
from speed_layer.join_context import ContextPart, kept_for_join, rule_of
from speed_layer.lane import Lane
from speed_layer.maintenance import Upkeep, keep_back, maintain, prunable
from speed_layer.recovery import record_version
from speed_layer.view_input import view_input
from speed_layer.watermarks import late_for, late_rows, parameters
from views.base import ViewContext
from views.registry import ViewRegistry

log = logging.getLogger(__name__)
TIMINGS_KEPT = 8  # micro-batches whose phase timings wait for the lane to report them


class MicroBatchProcessor:
    """The ``foreachBatch`` function of a lane."""

    def __init__(
        self,
        spark: SparkSession,
        settings: Settings,
        lane: Lane,
        registry: ViewRegistry,
        epoch: Callable[[], Epoch],
    ) -> None:
        self.spark = spark
        self.settings = settings
        self.lane = lane
        self.registry = registry
        self.epoch = epoch
        self.columns = event_columns(registry.contract)
        self.time = registry.contract.time_field
        #: what reads of the log filter on: the retained events' time (the look-back)
        self.indexed = (f"{lane_log.RETAINED}.{self.time}", f"{lane_log.CONTEXT}.{self.time}")
        #: the joins that keep only what they can still meet (``View.context_kept``)
        self.joins = [view for view in registry if view.keeps_context]
        #: the view settings their context is kept by (:func:`rule_of`)
        self.rule = rule_of(settings.views)
        #: and each view's time key (:func:`lane_log.index`), what compactions select on
        self.keys = {view.name: view.key for view in registry}
        #: what this process's maintenance of the log did so far (:func:`maintain`)
        self._upkeep = Upkeep()
        self.created_with = lane_log.properties(settings.stream.log_retention)
        #: :func:`view_input`, told the events' fields and the view settings once
        self._view_input = partial(
            view_input, columns=self.columns, time=self.time, settings=settings.views
        )
        self._catalog_ends = EndOffsets(settings, settings.kafka.catalog_topic)
        self._events_ends = EndOffsets(settings, settings.kafka.events_topic)
        self._catalog: tuple[dict[int, int], DataFrame, DataFrame] | None = None
        self._last: progress.BatchProgress | None = None
        self._fresh = False  # no progress row at start: nothing to rebase until one
        self._busy = threading.Lock()  # a micro-batch and a rebase never overlap
        #: batch id -> where its time went inside ``foreachBatch`` (:meth:`_micro_batch`)
        self.timings: dict[int, dict[str, int]] = {}

    def _context(self) -> ViewContext:
        """The views' context: the catalog as it stands now and its versions.

        Both are re-read only when the topic moved (the versions only if a view uses them).
        """
        ends = self._catalog_ends()
        if self._catalog is None or self._catalog[0] != ends:
            if self._catalog is not None:
                self._catalog[1].unpersist()
                self._catalog[2].unpersist()
            self._catalog = (
                ends,
                read_catalog(self.spark, self.settings, ends).persist(),
                read_catalog_versions(self.spark, self.settings, ends).persist(),
            )
        return ViewContext(self.settings.views, self._catalog[1], self._catalog[2])

    def close(self) -> None:
        """Release what the processor holds between micro-batches: a consumer, a cache.

        Called once the lane's query has stopped, so no micro-batch is using them.
        """
        self._catalog_ends.close()
        self._events_ends.close()
        if self._catalog is not None:
            self._catalog[1].unpersist()
            self._catalog[2].unpersist()
            self._catalog = None

    # -- epochs -----------------------------------------------------------------------
    def _retained(self, version: int | None) -> DataFrame | None:
        """The retained events of earlier micro-batches: the log as it was before this one."""
        if version is None:
            return None
        return lane_log.read(self.spark, self.lane, lane_log.RETAINED, version)

    def _kept(
        self, version: int | None, previous: progress.BatchProgress | None
    ) -> dict[str, tuple[ContextPart, DataFrame]]:
        """What each join kept of earlier micro-batches, at ``version``, and where.

        The part the row before names, with its rows, when the settings it was kept by
        are this lane's. A join is missing when no part is (a log written before lanes
        kept one, or whose view settings changed since): its join reads the retained
        events, and this micro-batch seeds a part of its own from them (:meth:`_process`).
        """
        if version is None or previous is None:
            return {}
        found = {}
        for view in self.joins:
            claim = previous.context_parts.get(view.name)
            if claim is None or not claim.kept_by(self.settings.views):
                continue
            rows = lane_log.read(self.spark, self.lane, claim.part, version, lane_log.CONTEXT)
            if rows is not None:
                found[view.name] = (claim, rows)
        return found

    def _epoch_state(
        self,
        epoch: Epoch,
        ctx: ViewContext,
        retained: DataFrame | None,
        held: list[DataFrame],
        batch: tuple[DataFrame, DataFrame] | None = None,
    ) -> list[DataFrame]:
        """The epoch's opening state, as log rows: its base plus what the lane already holds.

        What the lane read at or after the epoch's cutoff is recomputed from the retained
        events with the lateness decisions they were processed with. ``batch``: the
        opening micro-batch's own events and its events below the cutoff, computed in
        the same pass, so a view runs once in that micro-batch, not once for the epoch
        and once for the micro-batch: at a handoff the views' fixed cost is most of a
        small micro-batch's. One pass over both is the two passes merged (the law in
        :mod:`views.base`), and a join meets its partners in either, as in two. With
        nothing retained and no ``batch`` (a rebase before the lane's first micro-batch
        commits), the views run over a relation Spark's optimizer knows to be empty
        (``limit(0)``), so each plan folds to an empty one at planning: no job, no
        generated code, and the view's column still enters the log's schema.

        What the lane holds past the cutoff is cached for the commit (``held``): every
        view reads it, and each read of the log plans a scan of its own, with Delta's
        file listing in a job of its own: about twenty small jobs, one after the other,
        before the first view's rows. On the demo's lane (2026-11-29), a rebase took
        4.6-5.3 s with it cached and 5.4-6.0 s without.
        """
        mine = earlier = None
        if retained is not None:  # every view reads it: one scan of the log, not one each
            mine = retained.where(~below(epoch.cutoff)).persist()
            held.append(mine)
            earlier = retained.where(below(epoch.cutoff))
        if batch is not None:  # the micro-batch's events are cached already
            own, context = batch
            mine = own if mine is None else mine.unionByName(own)
            earlier = context if earlier is None else earlier.unionByName(context)
        pieces = []
        for view in self.registry:
            if mine is not None:
                events = self._view_input(view, mine, earlier, None, held, epoch.cutoff)
            else:
                schema = event_schema(self.registry.contract)
                events = self.spark.createDataFrame([], schema).limit(0)
            state = view.compute(events, ctx)
            base = epoch.base(view)
            if base is not None:
                state = base.unionByName(state)
            pieces.append(lane_log.state_rows(epoch.id, view.name, view.merge(state)))
        return pieces

    def follow_epoch(self) -> bool:
        """Between micro-batches: move the lane onto a newer epoch, if one was published.

        A micro-batch opens a new epoch itself, but Spark runs none without new events,
        so a caught-up lane on a quiet topic would keep serving the old epoch. This
        commits the new epoch's state exactly as the next micro-batch would build it,
        together with a ``rebase`` progress row, which is what moves readers. Returns
        whether it rebased; a no-op while a micro-batch runs, and while the topic holds
        events the lane has not read: the micro-batch that reads them opens the epoch
        in the same pass as its own events (:meth:`_epoch_state`), where a rebase first
        would hold that micro-batch back for a pass of its own.
        """
        if not self._busy.acquire(blocking=False):
            return False
        try:
            if self._last is None and not self._fresh:
                self._last = progress.latest(self.spark, self.lane)  # read once per start
                self._fresh = self._last is None
            last = self._last
            if last is None:
                return False  # the first micro-batch opens the lane's first epoch
            epoch = self.epoch()
            if epoch.id == last.epoch or not reaches(last.end_offsets, self._events_ends()):
                return False  # the same epoch, or events wait: their micro-batch opens it
            started = datetime.now(UTC).replace(tzinfo=None)
            retained = self._retained(lane_log.version(self.spark, self.lane))
            ctx = self._context()
            held: list[DataFrame] = []
            pieces = self._epoch_state(epoch, ctx, retained, held)
            row = replace(
                last,
                epoch=epoch.id,
                cutoff=epoch.cutoff,
                start_offsets=last.end_offsets,
                input_rows=0,
                read_rows=0,
                valid_rows=0,
                quarantined_rows=0,
                late_rows={},
                started_at=started,
                finished_at=datetime.now(UTC).replace(tzinfo=None),
                kind=progress.REBASE,
            )
            try:
                lane_log.commit(
                    self.spark,
                    self.lane,
                    [*pieces, progress.rows(self.spark, row)],
                    indexed=self.indexed,
                    keys=self.keys,
                    created_with=self.created_with,
                )
            finally:
                release(held)
            log.info("lane %s rebased onto epoch %s", self.lane.name, epoch.id)
            self._last = row
            return True
        finally:
            self._busy.release()

    # -- the micro-batch ----------------------------------------------------------------
    def _previous(self, batch_id: int) -> progress.BatchProgress | None:
        """The progress row before ``batch_id``: remembered, or read after a (re)start."""
        if self._last is not None and self._last.batch_id == batch_id - 1:
            return self._last
        return progress.latest(self.spark, self.lane, before=batch_id)

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        """Process one micro-batch (the ``foreachBatch`` entry point)."""
        with self._busy:
            self._micro_batch(batch, batch_id)

    def _micro_batch(self, batch: DataFrame, batch_id: int) -> None:
        """One micro-batch, timed phase by phase into :attr:`timings`.

        ``prepare``: the log's version, the epoch; ``count``: the one pass over the
        batch, and the views' plans built meanwhile; ``commit``: the views'
        contributions computed and written in one Delta commit; then, when due,
        ``compact``, ``pack``, ``prune``, ``gather`` and ``tidy`` (:func:`maintain`), and
        ``maintain`` for the rest.
        """
        lap = Laps()
        started = datetime.now(UTC).replace(tzinfo=None)
        spark = self.spark
        previous = self._previous(batch_id)
        epoch = self.epoch()
        version = record_version(spark, self.lane, batch_id)
        retained, kept = self._retained(version), self._kept(version, previous)
        held: list[DataFrame] = []  # what this micro-batch caches, released after its commit
        try:
            lap("prepare")
            stats, written = self._process(batch, batch_id, epoch, previous, retained, kept, held)
            start, end = committed_offsets(spark, self.lane, batch_id)
            lap("count")
            row = progress.BatchProgress(
                batch_id=batch_id,
                epoch=epoch.id,
                cutoff=epoch.cutoff,
                start_offsets=start,
                end_offsets=end,
                read_rows=offsets_read(start, end),
                started_at=started,
                finished_at=datetime.now(UTC).replace(tzinfo=None),
                **stats,
            )
            lane_log.commit(
                spark,
                self.lane,
                [*written, progress.rows(spark, row)],
                indexed=self.indexed,
                keys=self.keys,
                created_with=self.created_with,
                note=lane_log.batch_note(batch_id),
            )
            lap("commit")
        finally:
            release(held)
        self._upkeep = maintain(
            spark,
            self.settings,
            self.lane,
            self.registry,
            epoch,
            batch_id,
            row.max_event_time,
            self._upkeep,
            lap,
            row.context_parts,
        )
        lap("maintain")
        self._last = row
        self.timings[batch_id] = lap.ms
        for old in sorted(self.timings)[:-TIMINGS_KEPT]:
            del self.timings[old]

    def _process(
        self,
        batch: DataFrame,
        batch_id: int,
        epoch: Epoch,
        previous: progress.BatchProgress | None,
        earlier: DataFrame | None,
        kept: dict[str, tuple[ContextPart, DataFrame]],
        held: list[DataFrame],
    ) -> tuple[dict, list[DataFrame]]:
        """The micro-batch's counts for its progress row, and its rows for the log.

        The counting pass starts first; the views' context, the epoch's opening state
        (when this micro-batch opens one) and the views' plans are built while it runs.
        ``earlier``: the retained events; ``kept``: what each join kept (:meth:`_kept`),
        its context instead of them. ``held`` takes what the micro-batch caches: the
        flagged batch, and the views' join partners (``_view_input``).
        """
        views = list(self.registry)
        seen = previous.max_event_time if previous else None
        watermarks = {
            v.name: seen - self.settings.views.lateness(v.name) if seen else None for v in views
        }
        params = parameters(self.spark, batch_id, watermarks)
        owned = ~below(epoch.cutoff)
        valid = F.col("reason").isNull()
        none: Column = F.array().cast("array<string>")
        flagged = (
            batch.crossJoin(F.broadcast(params))
            .withColumn(
                "late_for",
                F.when(valid & owned, late_for(list(watermarks), self.time)).otherwise(none),
            )
            .drop(*(c for c in params.columns if c != "batch_id"))
            .persist()
        )
        held.append(flagged)
        counting = in_background(
            flagged.groupBy("partition")
            .agg(
                F.count("*").alias("input"),
                F.count(F.when(~valid, 1)).alias("bad"),
                F.count(F.when(valid & owned, 1)).alias("valid"),
                F.max(F.when(valid, F.col(self.time))).alias("max_time"),
                *[
                    F.count(F.when(F.array_contains("late_for", v.name), 1)).alias(f"late:{v.name}")
                    for v in views
                ],
            )
            .collect
        )
        every = flagged.where(valid).select(*self.columns, "late_for", "batch_id")
        events = every.where(owned)
        before_cutoff = every.where(~owned)
        context = before_cutoff if earlier is None else earlier.unionByName(before_cutoff)
        contexts = {name: rows.unionByName(before_cutoff) for name, (_, rows) in kept.items()}
        try:  # the views' plans are built while the counting pass runs (in_background)
            ctx = self._context()
            opening: list[DataFrame] = []
            contributions: dict[str, DataFrame] = {}
            if previous is None or previous.epoch != epoch.id:
                # the micro-batch's events go into the epoch's state, in the same pass
                opening = self._epoch_state(epoch, ctx, earlier, held, (events, before_cutoff))
                log.info("lane %s opens epoch %s in batch %d", self.lane.name, epoch.id, batch_id)
            else:
                contributions = {
                    view.name: lane_log.state_rows(
                        epoch.id,
                        view.name,
                        view.compute(
                            self._view_input(
                                view,
                                events,
                                contexts.get(view.name, context),
                                watermarks[view.name],
                                held,
                                epoch.cutoff,
                            ),
                            ctx,
                        ),
                    )
                    for view in views
                }
        finally:
            per_partition = counting()  # never leave the pass running behind a failure
        counts = {
            key: sum(r[key] for r in per_partition)
            for key in ("input", "bad", "valid", *(f"late:{v.name}" for v in views))
        }
        late = {v.name: counts[f"late:{v.name}"] for v in views if counts[f"late:{v.name}"]}
        clock = dict(previous.partition_clock) if previous else {}
        for row in per_partition:
            if row["max_time"] is not None:
                clock[row["partition"]] = max(
                    clock.get(row["partition"], row["max_time"]), row["max_time"]
                )
        written = opening + [
            rows for name, rows in contributions.items() if counts["valid"] > late.get(name, 0)
        ]
        if counts["bad"]:
            rows = quarantine.quarantine_rows(quarantined(flagged), self.lane.name, str(batch_id))
            written.append(lane_log.rows(lane_log.QUARANTINE, rows))
        if late:
            names = [v.name for v in views]
            late_events = late_rows(self.lane.name, events, params, names, self.columns)
            written.append(lane_log.rows(lane_log.LATE, late_events))
        max_time = min(clock.values()) if clock else None
        parts = {name: claim for name, (claim, _) in kept.items()}
        if counts["input"] > counts["bad"]:
            retained = every
            if max_time is not None:
                # the bound joined in as data, as the watermarks are (module docstring)
                back = keep_back(self.settings.views, self.registry)
                since = one_row(self.spark, {"_keep_since": (max_time - back, "timestamp")})
                retained = (
                    every.crossJoin(F.broadcast(since))
                    .where(~prunable(epoch, self.time, F.col("_keep_since")))
                    .drop("_keep_since")
                )
            written.append(lane_log.rows(lane_log.RETAINED, retained))
            for view in self.joins:
                source = retained
                if view.name in kept:
                    claim = kept[view.name][0]
                else:  # no part to go on: this micro-batch seeds one from what is retained
                    claim = ContextPart(lane_log.context_part(view.name, batch_id), self.rule)
                    if earlier is not None:
                        source = earlier.unionByName(retained)
                # no watermark: a literal that moves each micro-batch would recompile the
                # stage each time (module docstring), and it would drop only late events
                rows = kept_for_join(view, source, None, self.settings.views)
                written.append(lane_log.context_rows(claim.part, rows))
                parts[view.name] = claim
        stats = {
            "max_event_time": max_time,
            "partition_clock": clock,
            "input_rows": counts["input"],
            "valid_rows": counts["valid"],
            "quarantined_rows": counts["bad"],
            "late_rows": late,
            "context_parts": parts,
        }
        return stats, written
