"""Where serving views are read from in each design.

Lambda: the speed lane's state for its current epoch is already ``batch run k ⊕ speed
results from offsets >= cutoff k``; before the speed layer has run (or when a newer
batch run already covers everything the speed layer saw) the batch views alone are
served. Kappa: the version the pointer names (see :mod:`kappa.versions`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from pyspark.sql import SparkSession

from batch_layer import runs
from lk import storage
from lk.config import Settings
from lk.tables import Tables
from speed_layer import progress
from speed_layer.lambda_lane import LAMBDA_LANE
from speed_layer.lane import open_lane
from views.registry import default_registry


class ViewNotReadyError(RuntimeError):
    """Nothing has computed this view yet (no batch run, no streaming state)."""


@dataclass(frozen=True)
class ServingSource:
    """Where a serving view is read from, and why."""

    design: str
    description: str
    paths: dict[str, str]
    batch_paths: dict[str, str] = field(default_factory=dict)
    clock: datetime | None = None


def lambda_source(spark: SparkSession, settings: Settings) -> ServingSource:
    """The newest consistent Lambda source: batch run k with the speed epoch k, or batch k."""
    tables = Tables.of(settings)
    run = runs.latest_published(spark, tables)
    lane = open_lane(spark, tables, LAMBDA_LANE)
    last = progress.latest(spark, lane)
    speed_is_newer = last is not None and (
        run is None
        or (last.epoch == run.run_id and last.end_offsets != run.cutoff)
        or all(last.end_offsets.get(p, 0) >= o for p, o in run.cutoff.items())
    )
    registry = default_registry()
    if speed_is_newer:
        paths = {v.name: lane.state(last.epoch, v.name) for v in registry}
        batch = {}
        if last.epoch != "initial" and storage.exists(spark, tables.batch_run_dir(last.epoch)):
            batch = {v.name: tables.batch_view(last.epoch, v.name) for v in registry}
        return ServingSource(
            "lambda", f"batch run {last.epoch} + speed layer", paths, batch, last.max_event_time
        )
    if run is None:
        raise ViewNotReadyError("no data yet: run `lk batch` or `lk speed` first")
    paths = {name: tables.batch_view(run.run_id, name) for name in run.views}
    return ServingSource("lambda", f"batch run {run.run_id}", paths, dict(paths))
