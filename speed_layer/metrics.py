"""A lane's newest metrics (``_metrics.json`` next to its log): the one writer and reader.

The lane rewrites the file after every micro-batch it reports: Spark's progress (rates,
durations, the offsets it read up to, the de-duplication state) and what the lane adds
up over its life (recent phase timings, log outages, watermark drops). ``lk status``,
the Kappa replay's check and sensor, ``lk compare`` and the benchmarks read it; only
this module knows its name and layout. On local storage it is read as a plain file, so
a poller in another process (an Airflow sensor, a benchmark) needs no Spark session.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from lake import storage
from speed_layer.lane import Lane

FILE = "_metrics.json"


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
