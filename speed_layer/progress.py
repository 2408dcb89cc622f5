"""The lane's progress: one row per committed micro-batch, in the lane's log.

It is what makes a retried micro-batch deterministic (its watermarks come from the rows
before it), what readers use to pick the epoch they read, and what ``lk status`` shows.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from lake.inline import one_row
from lake.offsets import dump_offsets, load_offsets
from speed_layer import lane_log
from speed_layer.join_context import ContextPart
from speed_layer.lane import Lane

#: the progress row's columns and their SQL types
PROGRESS_COLUMNS = {
    "batch_id": "bigint",
    "epoch": "string",
    "cutoff": "string",
    "start_offsets": "string",
    "end_offsets": "string",
    "max_event_time": "timestamp",
    "input_rows": "bigint",
    "read_rows": "bigint",
    "valid_rows": "bigint",
    "quarantined_rows": "bigint",
    "late_rows": "string",
    "started_at": "timestamp",
    "finished_at": "timestamp",
    "partition_clock": "string",
    "kind": "string",
    "context_parts": "string",
}
MICRO_BATCH, REBASE = "micro-batch", "rebase"


@dataclass(frozen=True)
class BatchProgress:
    """What one micro-batch did.

    ``max_event_time`` is the lane's event-time clock after this batch: the minimum over
    partitions of ``partition_clock``, each partition's maximum event time so far.
    ``kind`` is ``rebase`` for a row that moved the lane onto a new epoch between
    micro-batches (it carries the id of the micro-batch before it and reads no offsets).
    ``finished_at`` is when the rows were ready to commit: the row is in that commit, so
    a micro-batch's whole duration is Spark's (``lk status``, from ``_metrics.json``).
    ``read_rows`` is every offset the micro-batch read (from Spark's checkpoint) and
    ``input_rows`` what reached it after de-duplication: the difference is what the
    de-duplication took out (:attr:`deduplicated`), counted once per commit.
    ``context_parts``: per join that keeps its context, the part it reads after this
    row and the settings that part was kept by (:mod:`speed_layer.join_context`).
    """

    batch_id: int
    epoch: str
    cutoff: dict[int, int]
    start_offsets: dict[int, int]
    end_offsets: dict[int, int]
    max_event_time: datetime | None
    input_rows: int
    valid_rows: int
    quarantined_rows: int
    late_rows: dict[str, int] = field(default_factory=dict)
    started_at: datetime | None = None
    finished_at: datetime | None = None
    partition_clock: dict[int, datetime] = field(default_factory=dict)
    kind: str = MICRO_BATCH
    read_rows: int | None = None
    context_parts: dict[str, ContextPart] = field(default_factory=dict)

    @property
    def deduplicated(self) -> int:
        """Records read and taken out before the views.

        Re-sends of an event already seen, and, only with ``stream.dedup_horizon`` set,
        records behind its watermark.
        """
        return 0 if self.read_rows is None else self.read_rows - self.input_rows


def rows(spark: SparkSession, progress: BatchProgress) -> DataFrame:
    """``progress`` as a row of the lane's log, committed with what the micro-batch wrote."""
    clock = {str(p): t.isoformat() for p, t in sorted(progress.partition_clock.items())}
    values = {
        "batch_id": progress.batch_id,
        "epoch": progress.epoch,
        "cutoff": dump_offsets(progress.cutoff),
        "start_offsets": dump_offsets(progress.start_offsets),
        "end_offsets": dump_offsets(progress.end_offsets),
        "max_event_time": progress.max_event_time,
        "input_rows": progress.input_rows,
        "read_rows": progress.read_rows,
        "valid_rows": progress.valid_rows,
        "quarantined_rows": progress.quarantined_rows,
        "late_rows": json.dumps(progress.late_rows),
        "started_at": progress.started_at,
        "finished_at": progress.finished_at,
        "partition_clock": json.dumps(clock),
        "kind": progress.kind,
        "context_parts": json.dumps(
            {view: [c.part, c.rule] for view, c in sorted(progress.context_parts.items())}
        ),
    }
    row = one_row(spark, {name: (values[name], kind) for name, kind in PROGRESS_COLUMNS.items()})
    return lane_log.rows(lane_log.PROGRESS, row)


def _parse(row: dict) -> BatchProgress:
    return BatchProgress(
        batch_id=row["batch_id"],
        epoch=row["epoch"],
        cutoff=load_offsets(row["cutoff"]),
        start_offsets=load_offsets(row["start_offsets"]),
        end_offsets=load_offsets(row["end_offsets"]),
        max_event_time=row["max_event_time"],
        input_rows=row["input_rows"],
        valid_rows=row["valid_rows"],
        quarantined_rows=row["quarantined_rows"],
        late_rows=json.loads(row["late_rows"] or "{}"),
        started_at=row["started_at"],
        finished_at=row["finished_at"],
        partition_clock={
            int(p): datetime.fromisoformat(t)
            for p, t in json.loads(row.get("partition_clock") or "{}").items()
        },
        kind=row.get("kind") or MICRO_BATCH,
        read_rows=row.get("read_rows"),
        context_parts={
            view: ContextPart(part, rule)
            for view, (part, rule) in json.loads(row.get("context_parts") or "{}").items()
        },
    )


def history(
    spark: SparkSession, lane: Lane, before: int | None = None, last: int | None = None
) -> list[BatchProgress]:
    """Committed micro-batches and rebases in order (optionally only ``batch_id < before``).

    A rebase sorts after the micro-batch whose id it carries (it finished later).
    """
    frame = lane_log.read(spark, lane, lane_log.PROGRESS)
    if frame is None:
        return []
    if before is not None:
        frame = frame.where(F.col("batch_id") < before)
    frame = frame.orderBy(F.col("batch_id").desc(), F.col("finished_at").desc())
    if last is not None:
        frame = frame.limit(last)
    return [_parse(r.asDict()) for r in reversed(frame.collect())]


def latest(spark: SparkSession, lane: Lane, before: int | None = None) -> BatchProgress | None:
    """The newest row (before ``before``): the lane's epoch, clock and offsets now."""
    rows = history(spark, lane, before=before, last=1)
    return rows[-1] if rows else None


def totals(spark: SparkSession, lane: Lane) -> dict[str, Any]:
    """Sums over the whole log: records read, de-duplicated, in, valid, quarantined, late."""
    late: dict[str, int] = {}
    rows = [r for r in history(spark, lane) if r.kind == MICRO_BATCH]
    for row in rows:
        for view, count in row.late_rows.items():
            late[view] = late.get(view, 0) + count
    return {
        "micro_batches": len(rows),
        "read_rows": sum(r.read_rows or r.input_rows for r in rows),
        "deduplicated": sum(r.deduplicated for r in rows),
        "input_rows": sum(r.input_rows for r in rows),
        "valid_rows": sum(r.valid_rows for r in rows),
        "quarantined_rows": sum(r.quarantined_rows for r in rows),
        "late_rows": late,
    }
