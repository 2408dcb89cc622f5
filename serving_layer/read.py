"""Read a serving view by name: the merged, presented rows readers are given."""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession

from config.settings import ViewSettings
from lake.source import ServingSource, ViewNotReadyError
from views.base import View


def serving_state(spark: SparkSession, view: View, source: ServingSource) -> DataFrame:
    """The merged state of ``view`` as ``source`` publishes it."""
    if view.name not in source.tables:
        raise ViewNotReadyError(f"{view.name} is not computed by {source.description}")
    return source.tables[view.name].read(spark)


def read_view(
    spark: SparkSession,
    source: ServingSource,
    view: View,
    settings: ViewSettings,
    *,
    with_status: bool = False,
) -> DataFrame:
    """Presented rows of ``view`` from ``source``, in key order.

    ``with_status`` adds ``status`` (``final`` or ``provisional``) by the rule of the
    design that built ``source`` (``source.label``).
    """
    presented = view.serve(serving_state(spark, view, source))
    if with_status:
        presented = source.label(spark, view, presented, settings)
    return presented.orderBy(*view.order_by) if view.order_by else presented


__all__ = ["ViewNotReadyError", "read_view", "serving_state"]
