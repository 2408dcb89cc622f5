"""One micro-batch of the streaming layers: the same view code, applied incrementally.

For every micro-batch ``[a, b)`` (already decoded and de-duplicated upstream):

1. malformed records go to the quarantine, with their reason;
2. events below the epoch's cutoff are skipped (the batch layer owns them);
3. per view, events older than the view's watermark are late: written to
   ``late_events`` and left out of that view, never silently. The watermark is the
   lane's event-time clock after the earlier micro-batches, minus the view's allowed
   lateness; the clock is the *minimum over partitions* of each partition's maximum
   event time, so a partition that a bounded micro-batch carried further ahead in
   event time does not make a slower partition's on-time events look late;
4. per view, ``contribution = view.compute(events)`` and, for the groups it touches,
   ``state = view.merge(state ∪ contribution)`` replaces those groups in one Delta commit;
5. the progress row is written last.

Every write carries ``txnAppId``/``txnVersion`` (the lane's app id, the batch id), so a
micro-batch replayed after a crash skips what was already committed and recomputes the
rest from the same inputs: exactly-once results.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from delta.tables import DeltaTable
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from batch_layer import bronze
from batch_layer.job import below
from event_log.catalog import read_catalog
from event_log.decode import EVENT_COLUMNS, EVENT_SCHEMA, quarantined, valid_events
from infra.topics import end_offsets
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
MAX_IN_LIST = 200
LATE_SCHEMA_EXTRA = ("lane", "view", "batch_id", "watermark")


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


def _literal(value: object) -> str:
    """A SQL literal for a group value (timestamps are UTC, the session time zone)."""
    if isinstance(value, datetime):
        return f"TIMESTAMP '{value.isoformat(sep=' ')}'"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    return str(value)


def in_list(column: str, values: Sequence[object]) -> str:
    """A SQL ``column IN (...)`` predicate for ``replaceWhere``."""
    return f"{column} IN ({', '.join(_literal(v) for v in values)})"


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
    def _retained(self, batch_id: int) -> DataFrame | None:
        if not storage.is_delta_table(self.spark, self.lane.retained):
            return None
        return (
            self.spark.read.format("delta")
            .load(self.lane.retained)
            .where(F.col("batch_id") < batch_id)
        )

    def _view_input(
        self, view: View, events: DataFrame, retained: DataFrame | None, watermark: datetime | None
    ) -> DataFrame:
        """Non-late events for ``view``, plus the context a join view needs.

        The context (earlier micro-batches, and events the batch layer owns) lets a
        stream-stream join find its partner across a micro-batch or cutoff boundary.
        """
        own = events.where(~F.array_contains("late_for", view.name))
        if view.context_lookback is None or retained is None:
            return own.select(*EVENT_COLUMNS)
        context = retained.where(~F.array_contains("late_for", view.name))
        if watermark is not None:
            context = context.where(
                F.col("event_time") >= F.lit(watermark - view.context_lookback(self.settings.views))
            )
        return own.select(*EVENT_COLUMNS).unionByName(context.select(*EVENT_COLUMNS))

    def _open_epoch(self, epoch: Epoch, batch_id: int, ctx: ViewContext) -> None:
        """Build the epoch's state: its base merged with what the lane already holds."""
        retained = self._retained(batch_id)

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
            self._txn(writer.option("overwriteSchema", "true"), "epoch", batch_id).save(path)

        _each(build, list(self.registry))
        log.info("lane %s opened epoch %s at batch %d", self.lane.name, epoch.id, batch_id)

    # -- the micro-batch ----------------------------------------------------------------
    def _apply(self, view: View, path: str, contribution: DataFrame, batch_id: int) -> None:
        """Merge a contribution into the state, replacing only the groups it touches."""
        contribution = contribution.persist()
        try:
            groups = [r[0] for r in contribution.select(view.group_by).distinct().collect()]
            if not groups:
                return
            predicate, condition = _touched(view.group_by, groups)
            state = self.spark.read.format("delta").load(path)
            merged = view.merge(state.where(condition).unionByName(contribution))
            writer = (
                merged.write.format("delta").mode("overwrite").option("replaceWhere", predicate)
            )
            self._txn(writer, "state", batch_id).save(path)
        finally:
            contribution.unpersist()

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        """Process one micro-batch (the ``foreachBatch`` entry point)."""
        started = datetime.now(UTC).replace(tzinfo=None)
        spark = self.spark
        previous = progress.latest(spark, self.lane, before=batch_id)
        epoch = self.epoch()
        record_versions(
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
        if previous is None or previous.epoch != epoch.id:
            self._open_epoch(epoch, batch_id, ctx)
        batch = batch.persist()
        try:
            stats = self._process(batch, batch_id, epoch, previous, ctx)
        finally:
            batch.unpersist()
        start, end = committed_offsets(spark, self.lane, batch_id)
        progress.append(
            spark,
            self.lane,
            progress.BatchProgress(
                batch_id=batch_id,
                epoch=epoch.id,
                cutoff=epoch.cutoff,
                start_offsets=start,
                end_offsets=end,
                started_at=started,
                finished_at=datetime.now(UTC).replace(tzinfo=None),
                **stats,
            ),
        )

    def _process(
        self,
        batch: DataFrame,
        batch_id: int,
        epoch: Epoch,
        previous: progress.BatchProgress | None,
        ctx: ViewContext,
    ) -> dict:
        spark, views = self.spark, list(self.registry)
        per_partition = (
            batch.groupBy("partition")
            .agg(
                F.count("*").alias("input"),
                F.count(F.when(F.col("reason").isNotNull(), 1)).alias("bad"),
                F.max(F.when(F.col("reason").isNull(), F.col("event_time"))).alias("max_time"),
            )
            .collect()
        )
        counts = {
            "input": sum(r["input"] for r in per_partition),
            "bad": sum(r["bad"] for r in per_partition),
        }
        if counts["bad"]:
            bronze.ensure_tables(spark, self.tables)
            bronze.quarantine(spark, self.tables, quarantined(batch), self.lane.name, str(batch_id))
        clock = dict(previous.partition_clock) if previous else {}
        for row in per_partition:
            if row["max_time"] is not None:
                clock[row["partition"]] = max(
                    clock.get(row["partition"], row["max_time"]), row["max_time"]
                )
        seen = previous.max_event_time if previous else None
        max_time = min(clock.values()) if clock else None
        watermarks = {
            v.name: seen - self.settings.views.lateness(v.name) if seen else None for v in views
        }
        owned = ~below(epoch.cutoff)
        none: Column = F.array().cast("array<string>")
        every = (
            valid_events(batch)
            .withColumn("late_for", F.when(owned, _late_for(watermarks)).otherwise(none))
            .withColumn("batch_id", F.lit(batch_id).cast("long"))
            .persist()
        )
        try:
            events = every.where(owned)
            late = self._write_late(events, watermarks, batch_id)
            earlier = self._retained(batch_id)
            context = every.where(~owned)
            if earlier is not None:
                context = earlier.unionByName(context)
            self._append(every, self.lane.retained, "retained", batch_id)

            def update(view: View) -> None:
                view_input = self._view_input(view, events, context, watermarks[view.name])
                contribution = view.compute(view_input, ctx)
                self._apply(view, self.lane.state(epoch.id, view.name), contribution, batch_id)

            _each(update, views)
            valid = events.count()
        finally:
            every.unpersist()
        if batch_id % PRUNE_EVERY == 0 and max_time is not None:
            self._prune(epoch, max_time)
        return {
            "max_event_time": max_time,
            "partition_clock": clock,
            "input_rows": counts["input"],
            "valid_rows": valid,
            "quarantined_rows": counts["bad"],
            "late_rows": late,
        }

    def _write_late(
        self, events: DataFrame, watermarks: dict[str, datetime | None], batch_id: int
    ) -> dict[str, int]:
        late = events.where(F.size("late_for") > 0).select(
            F.explode("late_for").alias("view"), *EVENT_COLUMNS
        )
        counts = {
            r["view"]: r["n"] for r in late.groupBy("view").agg(F.count("*").alias("n")).collect()
        }
        if counts:
            watermark = F.create_map(
                *[
                    x
                    for name, w in watermarks.items()
                    if w is not None
                    for x in (F.lit(name), F.lit(w))
                ]
            )
            rows = late.select(
                F.lit(self.lane.name).alias("lane"),
                "view",
                F.lit(batch_id).cast("long").alias("batch_id"),
                watermark[F.col("view")].alias("watermark"),
                *EVENT_COLUMNS,
            )
            self._append(rows, self.lane.late_events, "late", batch_id)
        return counts

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


def _touched(column: str, groups: list) -> tuple[str, Column]:
    """The rows a contribution's groups cover: an IN list when short, else their range.

    A range covers every group in it, so reading and replacing the same range keeps the
    merge exact; it keeps the predicate (and the plan) small when a replay touches
    thousands of users at once.
    """
    if len(groups) <= MAX_IN_LIST:
        return in_list(column, groups), F.col(column).isin(groups)
    low, high = min(groups), max(groups)
    predicate = f"{column} >= {_literal(low)} AND {column} <= {_literal(high)}"
    return predicate, (F.col(column) >= F.lit(low)) & (F.col(column) <= F.lit(high))


def _each(action: Callable[[View], None], views: list[View]) -> None:
    """Run ``action`` for every view at once; the first failure is raised.

    Each view writes its own table, and on a small machine a micro-batch is dominated by
    per-job and per-commit overhead, which concurrent Spark jobs overlap.
    """
    with ThreadPoolExecutor(max_workers=len(views) or 1, thread_name_prefix="view") as pool:
        for future in [pool.submit(action, view) for view in views]:
            future.result()


def _late_for(watermarks: dict[str, datetime | None]) -> Column:
    """The names of the views for which the row's event time is behind their watermark."""
    flags = [
        F.when(F.col("event_time") < F.lit(w), F.lit(name))
        for name, w in watermarks.items()
        if w is not None
    ]
    if not flags:
        return F.array().cast("array<string>")
    return F.filter(F.array(*flags), lambda x: x.isNotNull())
