"""Every few micro-batches, a lane's log is tidied: the state merged, old retained events dropped.

Readers see the same rows before and after: the merge rule is applied to the state on
read anyway, and the dropped events are older than anything a rebase or a join can
still need. Kept apart from the micro-batch because it never changes what one computes,
only what the log costs to read and to keep.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from config.settings import Settings, ViewSettings
from lake.offsets import below
from speed_layer import lane_log
from speed_layer.epoch import Epoch
from speed_layer.lane import Lane
from views.registry import ViewRegistry

PRUNE_EVERY = 20


def maintain(
    spark: SparkSession,
    settings: Settings,
    lane: Lane,
    registry: ViewRegistry,
    epoch: Epoch,
    batch_id: int,
    clock: datetime | None,
) -> None:
    """After micro-batch ``batch_id``: compact and prune the lane's log, when due.

    Every ``stream.compact_every`` micro-batches the views' state is rewritten merged in
    one commit; every :data:`PRUNE_EVERY`, once the lane has an event-time ``clock``, the
    retained rows past the keep-back are deleted, and Delta rewrites only the files its
    statistics say may hold such rows (one commit, or none while nothing is that old, as
    in a live lane's first hour); every ``stream.tidy_every``, the append-only parts'
    small files are merged and the files no recent version needs are deleted.
    """
    if batch_id > 0 and batch_id % settings.stream.compact_every == 0:
        parts: list[str] = []
        pieces: list[DataFrame] = []
        for view in registry:
            table = lane_log.state_table(lane, epoch.id, view.name)
            parts.append(lane_log.state_part(epoch.id, view.name))
            pieces.append(lane_log.state_rows(epoch.id, view.name, view.merge(table.read(spark))))
        lane_log.replace(spark, lane, parts, pieces)
    if batch_id > 0 and batch_id % PRUNE_EVERY == 0 and clock is not None:
        since = F.lit(clock - keep_back(settings.views, registry))
        old = prunable(epoch, registry.contract.time_field, since, prefix=f"{lane_log.RETAINED}.")
        lane_log.delete(spark, lane, lane_log.RETAINED, old)
    if batch_id > 0 and batch_id % settings.stream.tidy_every == 0:
        lane_log.merge_small_files(spark, lane, lane_log.APPEND_ONLY)
        lane_log.vacuum(spark, lane)


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
