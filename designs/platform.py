"""The one place where ``mode`` picks the wiring; the view code is the same in both designs.

============  ==============================================  =========================
mode          streaming job (``lk speed``)                    readers are served from
============  ==============================================  =========================
``lambda``    lane ``lambda-speed``: offsets >= batch cutoff  batch run k ⊕ speed epoch k
``kappa``     lane ``kappa-v{n}`` of the serving version      kappa version n
============  ==============================================  =========================
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from config.settings import Settings
from event_log.configured import load_contract
from event_log.contract import EventContract
from lake.source import ServingSource, ViewNotReadyError
from lake.tables import Tables
from serving_layer.read import read_view
from serving_layer.refresh import Refresher
from speed_layer.stream import LaneRun
from views.loader import load_registry
from views.registry import ViewRegistry

NO_KAPPA_VERSION = "no Kappa version yet: run `lk kappa reprocess` to build v1"


@dataclass(frozen=True)
class Platform:
    """The platform built once from the settings: every entry point asks it, not ``mode``.

    Attributes:
        settings: the typed settings.
        registry: the views, one registry for every layer and reader, over the event
            contract every layer decodes with (``registry.contract``).
    """

    settings: Settings
    registry: ViewRegistry

    @property
    def contract(self) -> EventContract:
        """The events every layer decodes, validates and de-duplicates."""
        return self.registry.contract

    @property
    def tables(self) -> Tables:
        """Where every table lives."""
        return Tables.of(self.settings)

    @property
    def kappa(self) -> bool:
        """Whether this is the Kappa design (the one branch on ``mode``)."""
        return self.settings.mode == "kappa"

    def serving_source(self, spark: SparkSession) -> ServingSource:
        """Where readers (``lk query``, SQL views, the HTTP API) read each view."""
        if self.kappa:
            from designs.kappa.versions import kappa_source

            return kappa_source(spark, self.tables, self.registry)
        from designs.lambda_arch.source import lambda_source

        return lambda_source(spark, self.tables, self.registry)

    def watched_tables(self) -> tuple[str, ...]:
        """Tables whose commits are the only things that can change the serving source."""
        if self.kappa:
            from designs.kappa.versions import pointer_path

            return (pointer_path(self.tables),)
        from designs.lambda_arch.source import watched_tables

        return watched_tables(self.tables)

    def read(self, spark: SparkSession, name: str, *, with_status: bool = False) -> DataFrame:
        """Presented rows of view ``name`` as readers are served them."""
        view = self.registry.get(name)
        source = self.serving_source(spark)
        return read_view(spark, source, view, self.settings.views, with_status=with_status)

    def refresher(
        self, spark: SparkSession | None = None, interval: timedelta | float | None = None
    ) -> Refresher:
        """What keeps the HTTP API's in-memory snapshots current (see ``serving_layer``)."""
        return Refresher(
            self.settings,
            self.registry,
            self.serving_source,
            pointers=self.watched_tables(),
            spark=spark,
            interval=interval,
        )

    def streaming_lane_name(self, spark: SparkSession) -> str:
        """The lane ``lk speed`` keeps fresh in this mode."""
        if self.kappa:
            from designs.kappa.versions import lane_name, serving_version

            version = serving_version(spark, self.tables)
            if version is None:
                raise ViewNotReadyError(NO_KAPPA_VERSION)
            return lane_name(version)
        from designs.lambda_arch.epochs import LAMBDA_LANE

        return LAMBDA_LANE

    def run_streaming(
        self,
        spark: SparkSession,
        *,
        until_caught_up: bool,
        on_progress: Callable[[dict], None] | None = None,
    ) -> LaneRun:
        """Run this mode's streaming job: the Lambda speed layer, or the serving Kappa version."""
        if self.kappa:
            from designs.kappa.reprocess import run_version
            from designs.kappa.versions import open_version, serving_version

            version = serving_version(spark, self.tables)
            if version is None:
                raise ViewNotReadyError(NO_KAPPA_VERSION)
            lane = open_version(spark, self.settings, version)
            return run_version(
                spark,
                self.settings,
                lane,
                self.registry,
                until_caught_up=until_caught_up,
                on_progress=on_progress,
            )
        from designs.lambda_arch.epochs import run_speed

        return run_speed(
            spark,
            self.settings,
            self.registry,
            until_caught_up=until_caught_up,
            on_progress=on_progress,
        )

    def build_history(self, spark: SparkSession) -> dict[str, Any]:
        """Serve the log as it is now: Lambda's first batch run, or Kappa's first version."""
        if self.kappa:
            from designs.kappa.reprocess import reprocess

            done = reprocess(spark, self.settings, self.registry)
            return {"job": "kappa reprocess", "version": done.version, "offsets": done.offsets}
        from batch_layer.job import run_batch

        run = run_batch(spark, self.settings, self.registry).run
        return {"job": "batch run", "run_id": run.run_id, "cutoff": dict(run.cutoff)}

    def scheduled_recompute(self, spark: SparkSession) -> dict[str, Any] | None:
        """The design's periodic recompute while live (Lambda's nightly batch; Kappa: none)."""
        if self.kappa:
            return None
        from batch_layer.job import run_batch

        run = run_batch(spark, self.settings, self.registry).run
        return {"job": "batch run", "run_id": run.run_id, "cutoff": dict(run.cutoff)}

    def serve_new_logic(self, spark: SparkSession) -> dict[str, Any]:
        """Serve every view under this platform's (changed) view settings, whole log included.

        Lambda recomputes through the batch layer and rebases its speed lane onto the new
        run; Kappa reprocesses into a new version (blue/green) and switches.
        """
        if self.kappa:
            from designs.kappa.reprocess import reprocess

            done = reprocess(spark, self.settings, self.registry)
            return {"jobs": ["kappa reprocess"], "version": done.version, "offsets": done.offsets}
        from batch_layer.job import run_batch

        run = run_batch(spark, self.settings, self.registry, force=True).run
        self.run_streaming(spark, until_caught_up=True)
        return {"jobs": ["batch run", "speed rebase"], "run_id": run.run_id}

    def served_cutoff(self, spark: SparkSession) -> dict[int, int] | None:
        """Offsets below which readers are served a batch run (Lambda), else None (Kappa)."""
        if self.kappa:
            return None
        from batch_layer.runs import latest_published

        run = latest_published(spark, self.tables)
        return dict(run.cutoff) if run else {}

    def design_status(self, spark: SparkSession) -> dict[str, Any]:
        """What only this design has to report (Kappa: the versions and the pointer)."""
        if not self.kappa:
            return {}
        from designs.kappa.versions import existing_versions, serving_version

        return {
            "kappa": {
                "serving_version": serving_version(spark, self.tables),
                "versions": existing_versions(spark, self.tables),
            }
        }


def build(settings: Settings, registry: ViewRegistry | None = None) -> Platform:
    """The platform for ``settings``: its event contract and view module, built once.

    Raises:
        ContractError: the ``events:`` section does not make a contract (names the schema).
        ViewModuleError: the view module does not load (names the module and problem).
    """
    if registry is None:
        registry = load_registry(settings, load_contract(settings.events))
    return Platform(settings, registry)


#: The design each Airflow DAG operates; ``None``: it serves whichever design ``mode`` picks.
DAG_DESIGNS: dict[str, str | None] = {
    "lambda_nightly": "lambda",
    "kappa_reprocess": "kappa",
    "speed_layer_watchdog": None,
    "compare_architectures": None,
}


def dag_skip_reason(dag_id: str, settings: Settings) -> str | None:
    """Why ``dag_id`` has nothing to do under the configured ``mode`` (None: it runs).

    One config value switches what Airflow operates: the other design's DAGs skip
    (a skip, not a failure, so a mode switch does not page anyone).
    """
    design = DAG_DESIGNS[dag_id]
    if design is None or design == settings.mode:
        return None
    return (
        f"{dag_id} operates the {design} design, but mode is {settings.mode!r} "
        "(lk.yaml `mode` / LK_MODE): skipping"
    )
