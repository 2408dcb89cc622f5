"""A lane's newest metrics (``_metrics.json`` next to its log): the one writer and reader.

A running lane's :class:`Tally` rewrites the file after every micro-batch Spark reports:
its progress (rates, durations, the offsets it read up to, the de-duplication state) and
what the lane adds up over its life (recent phase timings, log outages, watermark
drops). ``lk status``, the Kappa replay's check and sensor, ``lk compare`` and the
benchmarks read it; only this module knows its name and layout. On local storage it is
read as a plain file, so a poller in another process (an Airflow sensor, a benchmark)
needs no Spark session.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql.streaming import StreamingQuery

from lake import storage
from lake.storage import table_size
from speed_layer.lane import Lane
from speed_layer.spark_progress import STATE_PHASES, progress_metrics

FILE = "_metrics.json"
RECENT = 50  # micro-batches whose phase durations the file keeps (for medians)
SIZE_EVERY_S = 60.0  # how often a running lane measures its log's size
#: Called with each newest micro-batch's metrics, once saved (``lk speed`` prints them).
Progress = Callable[[dict], None]


def metrics_uri(root: str) -> str:
    """Where the metrics of the lane at ``root`` are (next to its log)."""
    return f"{root}/{FILE}"


def write_metrics(spark: SparkSession, lane: Lane, metrics: dict[str, Any]) -> None:
    """Replace the lane's metrics (a reader sees the old or the new file, whole)."""
    storage.write_text(spark, metrics_uri(lane.root), json.dumps(metrics))


def read_metrics(spark: SparkSession | None, root: str) -> dict[str, Any] | None:
    """The newest metrics of the lane at ``root`` (``lane.root``, or :func:`lane_root`).

    None before its first micro-batch was reported, or for the instant the file is being
    replaced. Local storage is read as a plain file; any other through Spark's Hadoop
    client (then ``spark`` is needed).

    Raises:
        ValueError: ``root`` is not local and no session was given.
    """
    uri = metrics_uri(root)
    path = storage.local_path(uri)
    if path is not None:
        try:
            return json.loads(Path(path).read_text())
        except FileNotFoundError:
            return None
    if spark is None:
        raise ValueError(f"a SparkSession is needed to read {uri}")
    return json.loads(storage.read_text(spark, uri)) if storage.exists(spark, uri) else None


def processed_offsets(metrics: dict[str, Any] | None, topic: str) -> dict[int, int] | None:
    """The offsets of ``topic`` the lane had read up to in its newest reported micro-batch.

    None before any (no metrics yet, or none for that topic).
    """
    per_topic = (metrics or {}).get("end_offsets") or {}
    offsets = per_topic.get(topic)
    return None if offsets is None else {int(p): int(o) for p, o in offsets.items()}


def watermark_drops(metrics: dict[str, Any] | None) -> int:
    """Records a de-duplication watermark dropped unseen over the lane's life (0 if none)."""
    return int((metrics or {}).get("watermark_drops") or 0)


def dedup_outcome(deduplicated: int, metrics: dict[str, Any] | None) -> dict[str, int]:
    """What the de-duplication took out, split: re-sends, and records behind its watermark.

    ``deduplicated`` is read less what reached the views (the progress rows, exact); the
    watermark's share is Spark's count (:func:`watermark_drops`), 0 with no horizon set.
    """
    dropped = watermark_drops(metrics)
    return {"duplicates": deduplicated - dropped, "watermark_drops": dropped}


@dataclass
class Tally:
    """Counts a lane's micro-batches and saves each one's metrics once (``_metrics.json``).

    Besides Spark's own durations (``durationMs``: planning, ``addBatch``, the WAL and
    commit writes), each micro-batch's phases inside ``addBatch`` are kept
    (:attr:`MicroBatchProcessor.timings`), and the de-duplication state's own timings
    inside ``count`` (:data:`STATE_PHASES`), so ``lk status`` can say where the time goes.
    The lane's restarts while its log was out of reach go in as well (``log_outages``),
    and the records a watermark dropped over the lane's life (``watermark_drops``, carried
    over from the file a previous run left): every micro-batch's progress counts once.
    Every :data:`SIZE_EVERY_S` the log's size is measured too (``log_size``,
    :func:`lake.storage.table_size`: what its current version reads, what it keeps), so
    a poller sees storage over a long run without a Spark session of its own. The first
    measure comes one period after the tally starts, not at the first micro-batch: a
    measure is Spark jobs of its own (2 s in a fresh JVM), which a short run, such as
    a small Kappa replay, would wait for before its end.
    """

    spark: SparkSession
    lane: Lane
    on_progress: Progress | None
    batches: int = 0
    rows: int = 0
    last_id: int | None = None
    recent_phases: list[dict[str, int]] = field(default_factory=list)
    outages: dict[str, Any] = field(default_factory=lambda: {"restarts": 0, "last": None})
    watermark_drops: int = 0
    log_size: dict[str, Any] | None = None
    _sized_at: float = field(default_factory=time.monotonic)

    def __post_init__(self) -> None:
        before = read_metrics(self.spark, self.lane.root)
        self.watermark_drops = watermark_drops(before)
        self.last_id = (before or {}).get("batch_id")
        self.log_size = (before or {}).get("log_size")  # until this run measures it

    def restarted(self, reason: str) -> None:
        """Note a restart because the log was out of reach (saved with the next metrics)."""
        at = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        self.outages = {
            "restarts": self.outages["restarts"] + 1,
            "last": {"at": at, "reason": reason},
        }

    def record(self, query: StreamingQuery, timings: dict[int, dict[str, int]]) -> bool:
        """Take in the micro-batches the query reported since the last call, in order.

        Returns whether there were any. The newest progress is looked at first: a
        catching-up lane calls this every tenth of a second, and the recent ones are a
        hundred parsed reports.
        """
        newest = query.lastProgress
        if newest is None or newest.get("batchId") == self.last_id:
            return False
        reported = [progress_metrics(p) for p in query.recentProgress]
        new = [
            m
            for m in reported
            if m["batch_id"] is not None and (self.last_id is None or m["batch_id"] > self.last_id)
        ]
        for metrics in new:
            self._count(metrics, timings)
        if new:
            last = new[-1]
            now = time.monotonic()
            if now - self._sized_at >= SIZE_EVERY_S:
                self._sized_at = now
                size = table_size(self.spark, self.lane.log)
                at = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
                self.log_size = None if size is None else {**size, "at": at}
            write_metrics(
                self.spark,
                self.lane,
                {
                    **last,
                    "recent_phase_ms": self.recent_phases,
                    "log_outages": self.outages,
                    "watermark_drops": self.watermark_drops,
                    "log_size": self.log_size,
                },
            )
            if self.on_progress:
                self.on_progress(last)
        return bool(new)

    def _count(self, metrics: dict, timings: dict[int, dict[str, int]]) -> None:
        state = metrics["dedup_state"] or {}
        phases = {
            **metrics["duration_ms"],
            **timings.get(metrics["batch_id"], {}),
            **{
                phase: state[phase]
                for phase in STATE_PHASES.values()
                if state.get(phase) is not None
            },
        }
        self.recent_phases = [*self.recent_phases, phases][-RECENT:]
        self.watermark_drops += state.get("dropped_by_watermark") or 0
        self.last_id = metrics["batch_id"]
        self.batches += 1
        self.rows += metrics["input_rows"] or 0
