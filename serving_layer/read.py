"""Read a serving view by name: the merged, presented rows readers are given."""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

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
    """Presented rows of ``view`` from ``source``, in key order (optionally labelled)."""
    presented = view.serve(serving_state(spark, view, source))
    if with_status:
        presented = label(spark, settings, view, presented, source)
    return presented.orderBy(*view.order_by) if view.order_by else presented


def label(
    spark: SparkSession,
    settings: ViewSettings,
    view: View,
    rows: DataFrame,
    source: ServingSource,
) -> DataFrame:
    """Add ``status``: ``final`` or ``provisional``.

    Lambda: a row is final when the batch layer computed it exactly as served (no speed
    contribution); rows that include speed results are provisional until the next batch
    recomputes them. Kappa: a row is final once its ``settles_with`` time is behind the
    view's watermark (events that late are excluded for good), provisional before.
    """
    if source.design == "lambda":
        batch = source.batch_tables.get(view.name)
        if batch is None or batch == source.tables.get(view.name):
            return rows.withColumn("status", F.lit("final"))
        finals = view.present(batch.read(spark)).withColumn("_final", F.lit(1))
        joined = rows.join(finals, rows.columns, "left")
        return joined.withColumn(
            "status", F.when(F.col("_final").isNotNull(), "final").otherwise("provisional")
        ).drop("_final")
    clock = source.clock
    if clock is None or view.settles_with is None:
        return rows.withColumn("status", F.lit("provisional"))
    watermark = clock - settings.lateness(view.name)
    return rows.withColumn(
        "status",
        F.when(F.col(view.settles_with) <= F.lit(watermark), "final").otherwise("provisional"),
    )


__all__ = ["ViewNotReadyError", "read_view", "serving_state"]
