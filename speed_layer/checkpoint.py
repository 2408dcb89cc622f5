"""Read Spark's own checkpoint: the exact Kafka offsets of each micro-batch."""

from __future__ import annotations

import json

from pyspark.sql import SparkSession

from lake import storage
from lake.offsets import reaches
from speed_layer.lane import Lane


def planned_offsets(spark: SparkSession, lane: Lane, batch_id: int) -> dict[int, int]:
    """End offsets (per partition) Spark planned for ``batch_id``; empty if unknown."""
    uri = f"{lane.checkpoint}/offsets/{batch_id}"
    if batch_id < 0 or not storage.exists(spark, uri):
        return {}
    lines = storage.read_text(spark, uri).splitlines()
    sources = json.loads(lines[2]) if len(lines) > 2 else {}
    return {int(p): int(o) for topic in sources.values() for p, o in topic.items()}


def first_offsets(spark: SparkSession, lane: Lane) -> dict[int, int]:
    """The offsets the lane's first micro-batch started from (Spark's ``sources/0/0``)."""
    uri = f"{lane.checkpoint}/sources/0/0"
    if not storage.exists(spark, uri):
        return {}
    text = storage.read_text(spark, uri).strip().splitlines()[-1]
    return {int(p): int(o) for topic in json.loads(text).values() for p, o in topic.items()}


def last_committed(spark: SparkSession, lane: Lane) -> int | None:
    """The id of the newest micro-batch Spark committed (``commits/N``), if any."""
    ids = [int(n) for n in storage.list_files(spark, f"{lane.checkpoint}/commits") if n.isdigit()]
    return max(ids, default=None)


def committed_ends(spark: SparkSession, lane: Lane) -> dict[int, int]:
    """Where the newest committed micro-batch ended, per partition (empty before one)."""
    batch = last_committed(spark, lane)
    return planned_offsets(spark, lane, batch) if batch is not None else {}


def caught_up(spark: SparkSession, lane: Lane, target: dict[int, int]) -> bool:
    """Whether the committed micro-batches reach ``target`` in every partition.

    Read from the checkpoint, not from the query's progress events: a micro-batch counts
    only once Spark committed it, so a caught-up lane stops between micro-batches.
    """
    return reaches(committed_ends(spark, lane), target)


def committed_offsets(
    spark: SparkSession, lane: Lane, batch_id: int
) -> tuple[dict[int, int], dict[int, int]]:
    """``[start, end)`` offsets of micro-batch ``batch_id`` per partition."""
    start = planned_offsets(spark, lane, batch_id - 1) if batch_id else first_offsets(spark, lane)
    return start, planned_offsets(spark, lane, batch_id)


def offsets_read(start: dict[int, int], end: dict[int, int]) -> int:
    """How many offsets ``[start, end)`` spans over all partitions (every record read)."""
    return sum(o - start.get(p, 0) for p, o in end.items())
