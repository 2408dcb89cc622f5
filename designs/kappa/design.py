"""The Kappa design as the platform asks it: the version the pointer names serves."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pyspark.sql import SparkSession

from config.settings import Settings
from designs.kappa.reprocess import reprocess, run_version
from designs.kappa.versions import (
    existing_versions,
    kappa_source,
    lane_name,
    open_version,
    pointer_path,
    publish_alerts,
    serving_version,
    version_settings,
)
from lake.source import ServingSource, ViewNotReadyError
from lake.tables import Tables
from serving_layer.alerts import ALERT_VIEW, Published, lane_alerts
from speed_layer.stream import LaneRun
from views.registry import ViewRegistry

NO_KAPPA_VERSION = "no Kappa version yet: run `lk kappa reprocess` to build v1"


@dataclass(frozen=True)
class KappaDesign:
    """What only Kappa answers; the platform asks it when ``mode`` is ``kappa``."""

    settings: Settings
    registry: ViewRegistry

    #: the Airflow DAGs only this design runs (the others skip under it)
    dags = ("kappa_reprocess",)

    @property
    def tables(self) -> Tables:
        """Where every table lives."""
        return Tables.of(self.settings)

    def serving_source(self, spark: SparkSession) -> ServingSource:
        """The pointer's version."""
        return kappa_source(spark, self.tables, self.registry)

    def watched_tables(self) -> tuple[str, ...]:
        """The pointer log: only a switch moves the source."""
        return (pointer_path(self.tables),)

    def _serving(self, spark: SparkSession) -> int:
        version = serving_version(spark, self.tables)
        if version is None:
            raise ViewNotReadyError(NO_KAPPA_VERSION)
        return version

    def streaming_lane_name(self, spark: SparkSession) -> str:
        """The serving version's lane."""
        return lane_name(self._serving(spark))

    def run_streaming(
        self,
        spark: SparkSession,
        *,
        until_caught_up: bool,
        on_progress: Callable[[dict], None] | None = None,
    ) -> LaneRun:
        """The serving version's lane, with the view settings frozen into it.

        It publishes alerts after its commits (every ``kafka.alerts_every`` at most) and
        when it stops.
        """
        lane = open_version(spark, self.settings, self._serving(spark))
        tables = self.tables
        with lane_alerts(
            spark,
            self.settings,
            self.registry,
            "kappa",
            lambda s: kappa_source(s, tables, self.registry),
            version_settings(self.settings, lane).views.lateness(ALERT_VIEW),
            on_progress,
        ) as progress:
            run = run_version(
                spark,
                self.settings,
                lane,
                self.registry,
                until_caught_up=until_caught_up,
                on_progress=progress,
            )
        self.publish_alerts(spark)
        return run

    def publish_alerts(self, spark: SparkSession) -> Published | None:
        """The alerts topic made to say what the serving version serves."""
        return publish_alerts(spark, self.settings, self.registry)

    def _reprocess(self, spark: SparkSession) -> dict[str, Any]:
        done = reprocess(spark, self.settings, self.registry)
        return {"version": done.version, "offsets": done.offsets}

    def build_history(self, spark: SparkSession) -> dict[str, Any]:
        """The first version, replayed from offset 0."""
        return {"job": "kappa reprocess", **self._reprocess(spark)}

    def scheduled_recompute(self, spark: SparkSession) -> dict[str, Any] | None:
        """None: Kappa has no periodic recompute."""
        return None

    def serve_new_logic(self, spark: SparkSession) -> dict[str, Any]:
        """Reprocess into a new version (blue/green) and switch."""
        return {"jobs": ["kappa reprocess"], **self._reprocess(spark)}

    def served_cutoff(self, spark: SparkSession) -> dict[int, int] | None:
        """None: no batch run is served."""
        return None

    def design_status(self, spark: SparkSession) -> dict[str, Any]:
        """The versions and the one the pointer names."""
        return {
            "kappa": {
                "serving_version": serving_version(spark, self.tables),
                "versions": existing_versions(spark, self.tables),
            }
        }
