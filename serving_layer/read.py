"""Read a serving view by name: the merged, presented rows readers are given."""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession

from batch_layer.job import read_batch_state
from lk.config import Settings
from views.base import View
from views.registry import ViewRegistry, default_registry


class ViewNotReadyError(RuntimeError):
    """Nothing has computed this view yet (no batch run, no streaming state)."""


def serving_state(spark: SparkSession, settings: Settings, view: View) -> DataFrame:
    """The merged state of ``view`` for the configured mode."""
    state = read_batch_state(spark, settings, view)
    if state is None:
        raise ViewNotReadyError(f"{view.name} has no data yet: run `lk batch` (lambda) first")
    return state


def read_view(
    spark: SparkSession, settings: Settings, name: str, registry: ViewRegistry | None = None
) -> DataFrame:
    """Presented rows of view ``name``, in key order."""
    view = (registry or default_registry()).get(name)
    presented = view.present(serving_state(spark, settings, view))
    return presented.orderBy(*view.order_by) if view.order_by else presented
