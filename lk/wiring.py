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

from pyspark.sql import SparkSession

from lk.config import Settings
from serving_layer.source import ServingSource, ViewNotReadyError, lambda_source
from speed_layer.stream import LaneRun
from views.registry import ViewRegistry, default_registry


def serving_source(spark: SparkSession, settings: Settings) -> ServingSource:
    """Where readers (``lk query``, SQL views, the HTTP API) read each view."""
    if settings.mode == "kappa":
        from kappa.versions import kappa_source

        return kappa_source(spark, settings)
    return lambda_source(spark, settings)


def streaming_lane_name(spark: SparkSession, settings: Settings) -> str:
    """The lane ``lk speed`` keeps fresh in this mode."""
    if settings.mode == "kappa":
        from kappa.versions import lane_name, serving_version
        from lk.tables import Tables

        version = serving_version(spark, Tables.of(settings))
        if version is None:
            raise ViewNotReadyError("no Kappa version yet: run `lk kappa reprocess` to build v1")
        return lane_name(version)
    from speed_layer.lambda_lane import LAMBDA_LANE

    return LAMBDA_LANE


def run_streaming(
    spark: SparkSession,
    settings: Settings,
    registry: ViewRegistry | None = None,
    *,
    until_caught_up: bool,
    on_progress: Callable[[dict], None] | None = None,
) -> LaneRun:
    """Run this mode's streaming job: the Lambda speed layer, or the serving Kappa version."""
    registry = registry or default_registry()
    if settings.mode == "kappa":
        from kappa.reprocess import run_version
        from kappa.versions import open_version, serving_version
        from lk.tables import Tables

        version = serving_version(spark, Tables.of(settings))
        if version is None:
            raise ViewNotReadyError("no Kappa version yet: run `lk kappa reprocess` to build v1")
        lane = open_version(spark, settings, version)
        return run_version(
            spark,
            settings,
            lane,
            registry,
            until_caught_up=until_caught_up,
            on_progress=on_progress,
        )
    from speed_layer.lambda_lane import run_speed

    return run_speed(
        spark, settings, registry, until_caught_up=until_caught_up, on_progress=on_progress
    )


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
