"""Read a serving view by name: the merged, presented rows readers are given."""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession

from lk.config import Settings
from lk.wiring import serving_source
from serving_layer.source import ViewNotReadyError
from views.base import View
from views.registry import ViewRegistry, default_registry


def serving_state(spark: SparkSession, settings: Settings, view: View) -> DataFrame:
    """The merged state of ``view``."""
    source = serving_source(spark, settings)
    if view.name not in source.paths:
        raise ViewNotReadyError(f"{view.name} is not computed by {source.description}")
    return spark.read.format("delta").load(source.paths[view.name])


def read_view(
    spark: SparkSession, settings: Settings, name: str, registry: ViewRegistry | None = None
) -> DataFrame:
    """Presented rows of view ``name``, in key order."""
    view = (registry or default_registry()).get(name)
    presented = view.present(serving_state(spark, settings, view))
    return presented.orderBy(*view.order_by) if view.order_by else presented


__all__ = ["ViewNotReadyError", "read_view", "serving_state"]
