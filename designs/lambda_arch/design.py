"""The Lambda design as the platform asks it: batch run k ⊕ the speed lane past its cutoff."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pyspark.sql import SparkSession

from batch_layer import runs
from batch_layer.job import run_batch
from config.settings import Settings
from designs.lambda_arch.epochs import LAMBDA_LANE, run_speed
from designs.lambda_arch.source import lambda_source, watched_tables
from lake.source import ServingSource
from lake.tables import Tables
from serving_layer.alerts import ALERT_VIEW, Published, lane_alerts, publish_served
from speed_layer.stream import LaneRun
from views.registry import ViewRegistry


@dataclass(frozen=True)
class LambdaDesign:
    """What only Lambda answers; the platform asks it when ``mode`` is ``lambda``."""

    settings: Settings
    registry: ViewRegistry

    #: the Airflow DAGs only this design runs (the others skip under it)
    dags = ("lambda_nightly",)

    @property
    def tables(self) -> Tables:
        """Where every table lives."""
        return Tables.of(self.settings)

    def serving_source(self, spark: SparkSession) -> ServingSource:
        """The newest published batch run ⊕ the speed results past its cutoff."""
        return lambda_source(spark, self.tables, self.registry)

    def watched_tables(self) -> tuple[str, ...]:
        """The runs log and the lane's log."""
        return watched_tables(self.tables)

    def streaming_lane_name(self, spark: SparkSession) -> str:
        """The one speed lane."""
        return LAMBDA_LANE

    def run_streaming(
        self,
        spark: SparkSession,
        *,
        until_caught_up: bool,
        on_progress: Callable[[dict], None] | None = None,
    ) -> LaneRun:
        """The speed layer, its epochs following the published batch runs.

        It publishes alerts after its commits (every ``kafka.alerts_every`` at most) and
        when it stops: a batch run's correction is served, so alerted, once the lane has
        rebased onto it.
        """
        tables = self.tables
        with lane_alerts(
            spark,
            self.settings,
            self.registry,
            "lambda",
            lambda s: lambda_source(s, tables, self.registry),
            self.settings.views.lateness(ALERT_VIEW),
            on_progress,
        ) as progress:
            run = run_speed(
                spark,
                self.settings,
                self.registry,
                until_caught_up=until_caught_up,
                on_progress=progress,
            )
        self.publish_alerts(spark)
        return run

    def publish_alerts(self, spark: SparkSession) -> Published | None:
        """The alerts topic made to say what is served: batch run k ⊕ the speed lane."""
        tables = self.tables
        return publish_served(
            spark,
            self.settings,
            self.registry,
            "lambda",
            lambda s: lambda_source(s, tables, self.registry),
        )

    def _batch(self, spark: SparkSession, *, force: bool = False) -> runs.BatchRun:
        result = run_batch(spark, self.settings, self.registry, force=force)
        if not result.skipped:
            self.publish_alerts(spark)
        return result.run

    def build_history(self, spark: SparkSession) -> dict[str, Any]:
        """The first batch run."""
        run = self._batch(spark)
        return {"job": "batch run", "run_id": run.run_id, "cutoff": dict(run.cutoff)}

    def scheduled_recompute(self, spark: SparkSession) -> dict[str, Any] | None:
        """The nightly batch run."""
        run = self._batch(spark)
        return {"job": "batch run", "run_id": run.run_id, "cutoff": dict(run.cutoff)}

    def serve_new_logic(self, spark: SparkSession) -> dict[str, Any]:
        """Recompute through the batch layer, then rebase the speed lane onto the new run."""
        run = self._batch(spark, force=True)
        self.run_streaming(spark, until_caught_up=True)
        return {"jobs": ["batch run", "speed rebase"], "run_id": run.run_id}

    def served_cutoff(self, spark: SparkSession) -> dict[int, int] | None:
        """The published run's cutoff (``{}`` before the first run)."""
        run = runs.latest_published(spark, self.tables)
        return dict(run.cutoff) if run else {}

    def design_status(self, spark: SparkSession) -> dict[str, Any]:
        """Nothing beyond what every design reports (the batch run is reported for both)."""
        return {}
