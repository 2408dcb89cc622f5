"""The Lambda speed lane: its epochs follow the batch layer's published runs."""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import DataFrame, SparkSession

from batch_layer import runs
from config.settings import Settings
from lake import storage
from lake.tables import Tables
from speed_layer.epoch import Epoch
from speed_layer.lane import open_lane
from speed_layer.stream import LaneRun, run_lane
from views.base import View
from views.registry import ViewRegistry

LAMBDA_LANE = "lambda-speed"
INITIAL = "initial"  # the epoch of a lane before any batch run was published


def lambda_epoch(spark: SparkSession, settings: Settings) -> Callable[[], Epoch]:
    """The epoch provider: the latest published batch run.

    Asked at every micro-batch and every poll between them, it reads the runs log only
    when the log's Delta version moved (a listing, no Spark job).
    """
    tables = Tables.of(settings)
    known: dict[int | None, Epoch] = {}

    def current() -> Epoch:
        version = storage.delta_version(spark, tables.batch_runs)
        if version not in known:
            known.clear()
            known[version] = read(runs.latest_published(spark, tables))
        return known[version]

    def read(run: runs.BatchRun | None) -> Epoch:
        if run is None:
            return Epoch(INITIAL, {}, lambda view: None, keeps_history=True)

        def base(view: View) -> DataFrame | None:
            if view.name not in run.views:
                return None
            return tables.batch_view(run.run_id, view.name).read(spark)

        return Epoch(run.run_id, dict(run.cutoff), base, keeps_history=True)

    return current


def run_speed(
    spark: SparkSession,
    settings: Settings,
    registry: ViewRegistry,
    *,
    until_caught_up: bool = False,
    on_progress: Callable[[dict], None] | None = None,
) -> LaneRun:
    """Run the Lambda speed layer (until caught up, or until interrupted)."""
    lane = open_lane(spark, Tables.of(settings), LAMBDA_LANE)
    return run_lane(
        spark,
        settings,
        lane,
        registry,
        lambda_epoch(spark, settings),
        until_caught_up=until_caught_up,
        on_progress=on_progress,
    )
