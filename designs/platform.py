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
from typing import Any, Protocol

from pyspark.sql import DataFrame, SparkSession

from config.settings import Settings
from designs.kappa.design import KappaDesign
from designs.lambda_arch.design import LambdaDesign
from event_log.configured import load_contract
from event_log.contract import EventContract
from lake.source import ServingSource
from lake.tables import Tables
from serving_layer.alerts import Published
from serving_layer.read import read_view
from serving_layer.refresh import Refresher
from speed_layer.stream import LaneRun
from views.loader import load_registry
from views.registry import ViewRegistry


class Design(Protocol):
    """What the platform asks of a design; the rest of the code asks the platform."""

    @property
    def dags(self) -> tuple[str, ...]:
        """The Airflow DAGs only this design runs (under the other they skip)."""
        ...

    def serving_source(self, spark: SparkSession) -> ServingSource:
        """Where readers (``lk query``, SQL views, the HTTP API) read each view."""
        ...

    def watched_tables(self) -> tuple[str, ...]:
        """Tables whose commits are the only things that can change the serving source."""
        ...

    def streaming_lane_name(self, spark: SparkSession) -> str:
        """The lane ``lk speed`` keeps fresh."""
        ...

    def run_streaming(
        self,
        spark: SparkSession,
        *,
        until_caught_up: bool,
        on_progress: Callable[[dict], None] | None = None,
    ) -> LaneRun:
        """Run the design's streaming job."""
        ...

    def build_history(self, spark: SparkSession) -> dict[str, Any]:
        """Serve the log as it is now."""
        ...

    def scheduled_recompute(self, spark: SparkSession) -> dict[str, Any] | None:
        """The periodic recompute while live, if the design has one."""
        ...

    def serve_new_logic(self, spark: SparkSession) -> dict[str, Any]:
        """Serve every view under changed view settings, whole log included."""
        ...

    def served_cutoff(self, spark: SparkSession) -> dict[int, int] | None:
        """Offsets below which readers are served a batch run, if any is."""
        ...

    def design_status(self, spark: SparkSession) -> dict[str, Any]:
        """What only this design has to report."""
        ...

    def publish_alerts(self, spark: SparkSession) -> Published | None:
        """Make the alerts topic say which bursts are served now (``serving_layer.alerts``)."""
        ...


#: The one lookup from ``mode`` to its design; nothing else branches on ``mode``.
DESIGNS: dict[str, type[LambdaDesign | KappaDesign]] = {
    "lambda": LambdaDesign,
    "kappa": KappaDesign,
}


@dataclass(frozen=True)
class Platform:
    """The platform built once from the settings: every entry point asks it, not ``mode``.

    Attributes:
        settings: the typed settings.
        registry: the views, one registry for every layer and reader, over the event
            contract every layer decodes with (``registry.contract``).
        design: the design ``mode`` picks (:data:`DESIGNS`), built over the same two.
    """

    settings: Settings
    registry: ViewRegistry
    design: Design

    @property
    def contract(self) -> EventContract:
        """The events every layer decodes, validates and de-duplicates."""
        return self.registry.contract

    @property
    def tables(self) -> Tables:
        """Where every table lives."""
        return Tables.of(self.settings)

    def serving_source(self, spark: SparkSession) -> ServingSource:
        """Where readers (``lk query``, SQL views, the HTTP API) read each view."""
        return self.design.serving_source(spark)

    def watched_tables(self) -> tuple[str, ...]:
        """Tables whose commits are the only things that can change the serving source."""
        return self.design.watched_tables()

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
        return self.design.streaming_lane_name(spark)

    def run_streaming(
        self,
        spark: SparkSession,
        *,
        until_caught_up: bool,
        on_progress: Callable[[dict], None] | None = None,
    ) -> LaneRun:
        """Run this mode's streaming job: the Lambda speed layer, or the serving Kappa version."""
        return self.design.run_streaming(
            spark, until_caught_up=until_caught_up, on_progress=on_progress
        )

    def build_history(self, spark: SparkSession) -> dict[str, Any]:
        """Serve the log as it is now: Lambda's first batch run, or Kappa's first version."""
        return self.design.build_history(spark)

    def scheduled_recompute(self, spark: SparkSession) -> dict[str, Any] | None:
        """The design's periodic recompute while live (Lambda's nightly batch; Kappa: none)."""
        return self.design.scheduled_recompute(spark)

    def serve_new_logic(self, spark: SparkSession) -> dict[str, Any]:
        """Serve every view under this platform's (changed) view settings, whole log included.

        Lambda recomputes through the batch layer and rebases its speed lane onto the new
        run; Kappa reprocesses into a new version (blue/green) and switches.
        """
        return self.design.serve_new_logic(spark)

    def served_cutoff(self, spark: SparkSession) -> dict[int, int] | None:
        """Offsets below which readers are served a batch run (Lambda), else None (Kappa)."""
        return self.design.served_cutoff(spark)

    def design_status(self, spark: SparkSession) -> dict[str, Any]:
        """What only this design has to report (Kappa: the versions and the pointer)."""
        return self.design.design_status(spark)

    def publish_alerts(self, spark: SparkSession) -> Published | None:
        """Make the alerts topic say which bursts are served now, each one exactly once.

        The streaming job, a batch run and a Kappa switch call it themselves; ``lk batch``
        and the Airflow batch task call it after publishing a run (docs/semantics.md).
        """
        return self.design.publish_alerts(spark)


def build(settings: Settings, registry: ViewRegistry | None = None) -> Platform:
    """The platform for ``settings``: its event contract and view module, built once.

    Raises:
        ContractError: the ``events:`` section does not make a contract (names the schema).
        ViewModuleError: the view module does not load (names the module and problem).
    """
    if registry is None:
        registry = load_registry(settings, load_contract(settings.events))
    return Platform(settings, registry, DESIGNS[settings.mode](settings, registry))


#: The DAGs that serve whichever design ``mode`` picks (each design names its own).
SHARED_DAGS = ("speed_layer_watchdog", "compare_architectures")


def dag_skip_reason(dag_id: str, settings: Settings) -> str | None:
    """Why ``dag_id`` has nothing to do under the configured ``mode`` (None: it runs).

    One config value switches what Airflow operates: the other design's DAGs skip
    (a skip, not a failure, so a mode switch does not page anyone).
    """
    if dag_id in SHARED_DAGS or dag_id in DESIGNS[settings.mode].dags:
        return None
    owner = next(mode for mode, design in DESIGNS.items() if dag_id in design.dags)
    return (
        f"{dag_id} operates the {owner} design, but mode is {settings.mode!r} "
        "(lk.yaml `mode` / LK_MODE): skipping"
    )
