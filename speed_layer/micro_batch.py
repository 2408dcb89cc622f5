"""One micro-batch of the streaming layers: the same view code, applied incrementally.

For every micro-batch ``[a, b)`` (already decoded and de-duplicated upstream):

1. one pass over the batch counts rows, malformed rows, late rows per view and each
   partition's newest event time; malformed rows go to the quarantine;
2. events below the epoch's cutoff are skipped (the batch layer owns them);
3. per view, events older than the view's watermark are late: written to
   ``late_events`` and left out of that view, never silently. The watermark is the
   lane's event-time clock after the earlier micro-batches, minus the view's allowed
   lateness; the clock is the *minimum over partitions* of each partition's maximum
   event time, so a partition that a bounded micro-batch carried further ahead in
   event time does not make a slower partition's on-time events look late;
4. per view, ``contribution = view.compute(events)`` is *appended* to the view's state
   table. The state is a set of partial results that readers combine with the view's
   merge rule (:meth:`views.base.View.serve`), so a micro-batch costs what its own
   events cost, not what the state holds; every ``stream.compact_every`` micro-batches
   the state is rewritten as ``view.merge(state)`` (one row per key again);
5. the quarantine, ``late_events``, the retained events and the views are written at
   once, and the progress row last.

Every write carries ``txnAppId``/``txnVersion`` (the lane's app id, the batch id), so a
micro-batch replayed after a crash skips what was already committed and recomputes the
rest from the same inputs: exactly-once results.

What changes from one micro-batch to the next (its id, the watermarks) enters the plans
as *data*, a one-row table joined in (:func:`parameters`), and the earlier retained
events are read at the Delta version recorded before the batch, not filtered by id.
Spark writes literal numbers and timestamps into the code it generates, so a literal
that changed every micro-batch made Spark compile every stage again; as data, the plans
stay the same from batch to batch and Spark's code cache serves them. Two bounds stay
literals on purpose: the join context's (see ``_view_input``) and the pruning delete's
(every ``PRUNE_EVERY`` micro-batches); both let Delta skip old files.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from functools import partial

from delta.tables import DeltaTable
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from event_log.catalog import read_catalog
from event_log.decode import EVENT_COLUMNS, EVENT_SCHEMA, quarantined
from infra.topics import end_offsets
from lake import quarantine
from lake.offsets import below
from lk import storage
from lk.config import Settings
from lk.tables import Tables
from speed_layer import progress
from speed_layer.checkpoint import committed_offsets
from speed_layer.lane import Lane
from speed_layer.recovery import record_versions
from views.base import View, ViewContext
from views.registry import ViewRegistry

log = logging.getLogger(__name__)
PRUNE_EVERY = 20


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
        self.tables = Tables.of(settings)
        self._catalog: tuple[dict[int, int], DataFrame] | None = None
        self._last: progress.BatchProgress | None = None
        self._quarantine_ready = False
        self._busy = threading.Lock()  # a micro-batch and a rebase never overlap

    # -- writes -----------------------------------------------------------------------
    def _txn(self, writer, suffix: str, batch_id: int):
        return writer.option("txnAppId", f"{self.lane.txn_app_id}-{suffix}").option(
            "txnVersion", batch_id
        )

    def _append(self, frame: DataFrame, path: str, suffix: str, batch_id: int) -> None:
        writer = frame.write.format("delta").mode("append").option("mergeSchema", "true")
        self._txn(writer, suffix, batch_id).save(path)

    def _catalog_table(self) -> DataFrame:
        """The catalog as it stands now; re-read only when the topic moved."""
        ends = end_offsets(self.settings, self.settings.kafka.catalog_topic)
        if self._catalog is None or self._catalog[0] != ends:
            if self._catalog is not None:
                self._catalog[1].unpersist()
            self._catalog = (ends, read_catalog(self.spark, self.settings, ends).persist())
        return self._catalog[1]

    # -- epochs -----------------------------------------------------------------------
    def _retained(self, version: int | None) -> DataFrame | None:
        """The retained events of earlier micro-batches: the table as it was before this one."""
        if version is None:
            return None
        return (
            self.spark.read.format("delta").option("versionAsOf", version).load(self.lane.retained)
        )

    def _view_input(
        self, view: View, events: DataFrame, retained: DataFrame | None, watermark: datetime | None
    ) -> DataFrame:
        """Non-late events for ``view``, plus the context a join view needs.

        The context (earlier micro-batches, and events the batch layer owns) lets a
        stream-stream join find its partner across a micro-batch or cutoff boundary; it
        reaches back ``context_lookback`` behind the view's watermark. That bound is the
        one literal left on purpose: on the retained table it lets Delta skip every file
        older than the look-back, which costs a few compilations per micro-batch and saves
        re-reading the whole retained history for each one.
        """
        own = events.where(~F.array_contains("late_for", view.name))
        if view.context_lookback is None or retained is None:
            return own.select(*EVENT_COLUMNS)
        context = retained.where(~F.array_contains("late_for", view.name))
        if watermark is not None:
            since = watermark - view.context_lookback(self.settings.views)
            context = context.where(F.col("event_time") >= F.lit(since))
        return own.select(*EVENT_COLUMNS).unionByName(context.select(*EVENT_COLUMNS))

    def _open_epoch(
        self, epoch: Epoch, batch_id: int | None, ctx: ViewContext, retained: DataFrame | None
    ) -> None:
        """Build the epoch's state: its base merged with what the lane already holds.

        Inside micro-batch ``batch_id`` the writes carry its transaction id; between
        micro-batches (``None``) they are plain overwrites, idempotent by content.
        """

        def build(view: View) -> None:
            path = self.lane.state(epoch.id, view.name)
            if retained is not None:
                mine = retained.where(~below(epoch.cutoff))
                events = self._view_input(view, mine, retained.where(below(epoch.cutoff)), None)
            else:
                events = self.spark.createDataFrame([], EVENT_SCHEMA)
            state = view.compute(events, ctx)
            base = epoch.base(view)
            if base is not None:
                state = base.unionByName(state)
            writer = view.merge(state).write.format("delta").mode("overwrite")
            writer = writer.option("overwriteSchema", "true")
            if batch_id is not None:
                writer = self._txn(writer, "epoch", batch_id)
            writer.save(path)

        _all([partial(build, view) for view in self.registry])
        log.info("lane %s opened epoch %s after batch %s", self.lane.name, epoch.id, batch_id)

    def follow_epoch(self) -> bool:
        """Between micro-batches: move the lane onto a newer epoch, if one was published.

        A micro-batch opens a new epoch itself, but Spark runs none without new events,
        so a caught-up lane on a quiet topic would keep serving the old epoch. This
        rebuilds the new epoch's state exactly as the next micro-batch would (the base
        plus the retained events at or after its cutoff, with the lateness decisions
        they were processed with) and then records a ``rebase`` progress row, which is
        what moves readers. Returns whether it rebased; a no-op while a micro-batch runs.
        """
        if not self._busy.acquire(blocking=False):
            return False
        try:
            last = self._last or progress.latest(self.spark, self.lane)
            if last is None:
                return False  # the first micro-batch opens the lane's first epoch
            epoch = self.epoch()
            if epoch.id == last.epoch:
                return False
            started = datetime.now(UTC).replace(tzinfo=None)
            retained = self._retained(storage.delta_version(self.spark, self.lane.retained))
            ctx = ViewContext(self.settings.views, self._catalog_table())
            self._open_epoch(epoch, None, ctx, retained)
            row = replace(
                last,
                epoch=epoch.id,
                cutoff=epoch.cutoff,
                start_offsets=last.end_offsets,
                input_rows=0,
                valid_rows=0,
                quarantined_rows=0,
                late_rows={},
                started_at=started,
                finished_at=datetime.now(UTC).replace(tzinfo=None),
                kind=progress.REBASE,
            )
            progress.append(self.spark, self.lane, row)
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

    def _compact(self, view: View, path: str, batch_id: int) -> None:
        """Rewrite a view's state as one merged row per key (same content for readers)."""
        merged = view.merge(self.spark.read.format("delta").load(path))
        writer = merged.write.format("delta").mode("overwrite")
        self._txn(writer, "compact", batch_id).save(path)

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        """Process one micro-batch (the ``foreachBatch`` entry point)."""
        with self._busy:
            self._micro_batch(batch, batch_id)

    def _micro_batch(self, batch: DataFrame, batch_id: int) -> None:
        started = datetime.now(UTC).replace(tzinfo=None)
        spark = self.spark
        previous = self._previous(batch_id)
        epoch = self.epoch()
        versions = record_versions(
            spark,
            self.lane,
            batch_id,
            [
                self.lane.progress,
                self.lane.retained,
                self.lane.late_events,
                *(self.lane.state(epoch.id, view.name) for view in self.registry),
            ],
        )
        ctx = ViewContext(self.settings.views, self._catalog_table())
        retained = self._retained(versions[self.lane.retained])
        if previous is None or previous.epoch != epoch.id:
            self._open_epoch(epoch, batch_id, ctx, retained)
        batch = batch.persist()
        try:
            stats = self._process(batch, batch_id, epoch, previous, ctx, retained)
        finally:
            batch.unpersist()
        start, end = committed_offsets(spark, self.lane, batch_id)
        row = progress.BatchProgress(
            batch_id=batch_id,
            epoch=epoch.id,
            cutoff=epoch.cutoff,
            start_offsets=start,
            end_offsets=end,
            started_at=started,
            finished_at=datetime.now(UTC).replace(tzinfo=None),
            **stats,
        )
        progress.append(spark, self.lane, row)
        self._last = row

    def _process(
        self,
        batch: DataFrame,
        batch_id: int,
        epoch: Epoch,
        previous: progress.BatchProgress | None,
        ctx: ViewContext,
        earlier: DataFrame | None,
    ) -> dict:
        views = list(self.registry)
        seen = previous.max_event_time if previous else None
        watermarks = {
            v.name: seen - self.settings.views.lateness(v.name) if seen else None for v in views
        }
        params = parameters(self.spark, batch_id, watermarks)
        owned = ~below(epoch.cutoff)
        valid = F.col("reason").isNull()
        none: Column = F.array().cast("array<string>")
        flagged = batch.crossJoin(F.broadcast(params)).withColumn(
            "late_for", F.when(valid & owned, _late_for(list(watermarks))).otherwise(none)
        )
        per_partition = (
            flagged.groupBy("partition")
            .agg(
                F.count("*").alias("input"),
                F.count(F.when(~valid, 1)).alias("bad"),
                F.count(F.when(valid & owned, 1)).alias("valid"),
                F.max(F.when(valid, F.col("event_time"))).alias("max_time"),
                *[
                    F.count(F.when(F.array_contains("late_for", v.name), 1)).alias(f"late:{v.name}")
                    for v in views
                ],
            )
            .collect()
        )
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
        max_time = min(clock.values()) if clock else None
        every = flagged.where(valid).select(*EVENT_COLUMNS, "late_for", "batch_id")
        events = every.where(owned)
        context = every.where(~owned)
        if earlier is not None:
            context = earlier.unionByName(context)
        compact = batch_id % self.settings.stream.compact_every == 0

        def update(view: View) -> None:
            path = self.lane.state(epoch.id, view.name)
            if counts["valid"] > late.get(view.name, 0):
                view_input = self._view_input(view, events, context, watermarks[view.name])
                writer = view.compute(view_input, ctx).write.format("delta").mode("append")
                self._txn(writer, "state", batch_id).save(path)
            if compact:
                self._compact(view, path, batch_id)

        writes: list[Callable[[], None]] = [partial(update, view) for view in views]
        if counts["bad"]:
            writes.append(partial(self._quarantine, batch, batch_id))
        if late:
            writes.append(partial(self._write_late, events, params, list(watermarks), batch_id))
        if counts["input"] > counts["bad"]:
            writes.append(partial(self._append, every, self.lane.retained, "retained", batch_id))
        _all(writes)
        if batch_id % PRUNE_EVERY == 0 and max_time is not None:
            self._prune(epoch, max_time)
        return {
            "max_event_time": max_time,
            "partition_clock": clock,
            "input_rows": counts["input"],
            "valid_rows": counts["valid"],
            "quarantined_rows": counts["bad"],
            "late_rows": late,
        }

    def _quarantine(self, batch: DataFrame, batch_id: int) -> None:
        """Append the batch's malformed records to the shared quarantine.

        A plain append (with the lane's transaction id), not a MERGE: the rows are
        tagged with the lane and the attempt (``Lane.attempt``), and crash
        recovery deletes those of a micro-batch it undoes
        (:func:`speed_layer.recovery.recover`).
        """
        if not self._quarantine_ready:
            quarantine.ensure_table(self.spark, self.tables)
            self._quarantine_ready = True
        attempt = self.lane.attempt(batch_id)
        rows = quarantine.quarantine_rows(quarantined(batch), self.lane.name, attempt)
        self._append(rows, self.tables.quarantine, "quarantine", batch_id)

    def _write_late(
        self,
        events: DataFrame,
        params: DataFrame,
        views: list[str],
        batch_id: int,
    ) -> None:
        """Append every (view, event) pair that was too late for the view."""
        watermark = F.create_map(*[x for name in views for x in (F.lit(name), _watermark(name))])
        rows = events.where(F.size("late_for") > 0).select(
            F.lit(self.lane.name).alias("lane"),
            F.explode("late_for").alias("view"),
            "batch_id",
            *EVENT_COLUMNS,
        )
        rows = rows.crossJoin(F.broadcast(params.drop("batch_id"))).select(
            "lane", "view", "batch_id", watermark[F.col("view")].alias("watermark"), *EVENT_COLUMNS
        )
        self._append(rows, self.lane.late_events, "late", batch_id)

    def _prune(self, epoch: Epoch, max_time: datetime) -> None:
        """Drop retained events no rebase and no join context can need any more."""
        if not storage.is_delta_table(self.spark, self.lane.retained):
            return
        views = list(self.registry)
        keep_back = max(
            [self.settings.views.lateness(v.name) for v in views]
            + [
                v.context_lookback(self.settings.views) + self.settings.views.lateness(v.name)
                for v in views
                if v.context_lookback is not None
            ]
        ) + timedelta(minutes=5)
        old = F.col("event_time") < F.lit(max_time - keep_back)
        condition = (below(epoch.cutoff) & old) if epoch.keeps_history else old
        DeltaTable.forPath(self.spark, self.lane.retained).delete(condition)


def _all(writes: list[Callable[[], None]]) -> None:
    """Run independent writes at once; the first failure is raised.

    Each write goes to its own table, and on a small machine a micro-batch is dominated
    by per-job and per-commit overhead, which concurrent Spark jobs overlap.
    """
    with ThreadPoolExecutor(max_workers=len(writes) or 1, thread_name_prefix="write") as pool:
        for future in [pool.submit(write) for write in writes]:
            future.result()


def watermark_column(view: str) -> str:
    """The :func:`parameters` column that holds ``view``'s watermark."""
    return f"_watermark:{view}"


def _quoted(name: str) -> str:
    """``name`` as a quoted identifier (view names may hold dots or backticks)."""
    return "`" + name.replace("`", "``") + "`"


def _watermark(view: str) -> Column:
    return F.col(_quoted(watermark_column(view)))


def _timestamp_sql(moment: datetime | None) -> str:
    """A SQL timestamp literal; naive datetimes are UTC, as everywhere in the platform."""
    if moment is None:
        return "CAST(NULL AS TIMESTAMP)"
    aware = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    return f"TIMESTAMP '{aware.isoformat(sep=' ')}'"


def parameters(
    spark: SparkSession, batch_id: int, watermarks: dict[str, datetime | None]
) -> DataFrame:
    """A one-row table of what changes every micro-batch: its id and each view's watermark.

    Plans join it in (broadcast) instead of carrying the values as literals, so they stay
    the same from one micro-batch to the next (see the module docstring). An inline SQL
    table is a local relation: its values never reach generated code, and broadcasting
    it runs no job (``createDataFrame`` would ship the row through a Python RDD).
    """
    values = [f"CAST({int(batch_id)} AS BIGINT)", *map(_timestamp_sql, watermarks.values())]
    names = ["batch_id", *(watermark_column(name) for name in watermarks)]
    columns = ", ".join(map(_quoted, names))
    return spark.sql(f"SELECT * FROM VALUES ({', '.join(values)}) AS parameters({columns})")


def _late_for(views: list[str]) -> Column:
    """The names of the views whose watermark (a :func:`parameters` column) the row is behind.

    No watermark yet (null) means nothing is late.
    """
    if not views:
        return F.array().cast("array<string>")
    flags = [F.when(F.col("event_time") < _watermark(name), F.lit(name)) for name in views]
    return F.filter(F.array(*flags), lambda x: x.isNotNull())
