"""The stream-table join with the catalog, under the rule a view's settings choose.

``current``: each event joins the product's row in the catalog table as it stands when the
layer computes. ``as_of_event_time``: each event joins the version that was valid at its
event time, the newest version whose ``valid_from`` is at or before it (a delete is a
version too); so the answer depends on the events and the catalog's history only, never
on when a layer ran. Written once here, used by every layer through the view.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from event_log.schema import UNKNOWN_CATEGORY
from views.base import ViewContext


def with_category(events: DataFrame, ctx: ViewContext, view: str) -> DataFrame:
    """``events`` with a ``category`` column under ``view``'s catalog join rule.

    A product absent from the catalog (never inserted, deleted, or, as of an event's time,
    not yet inserted) gets ``unknown``. Each event keeps exactly one row.
    """
    if ctx.settings.join_rule(view) == "as_of_event_time":
        return _as_of_event_time(events, ctx, view)
    if ctx.catalog is None:
        raise ValueError(f"{view} needs the catalog table in its ViewContext")
    categories = F.broadcast(ctx.catalog.select("product_id", "category"))
    return events.join(categories, "product_id", "left").withColumn(
        "category", F.coalesce("category", F.lit(UNKNOWN_CATEGORY))
    )


def _as_of_event_time(events: DataFrame, ctx: ViewContext, view: str) -> DataFrame:
    """The version valid at each event's time: newest ``valid_from <= event_time``.

    Ties on ``valid_from`` go to the later change in the log (partition, then offset).
    An event is one log record (its ``partition`` and ``offset``), so ranking the
    versions per record keeps one row per event.
    """
    if ctx.catalog_versions is None:
        raise ValueError(f"{view} joins as of event time: it needs the catalog's versions")
    versions = F.broadcast(
        ctx.catalog_versions.select(
            F.col("product_id").alias("_v_product"),
            F.col("category").alias("_v_category"),
            F.col("valid_from").alias("_v_from"),
            F.col("partition").alias("_v_partition"),
            F.col("offset").alias("_v_offset"),
        )
    )
    valid = (F.col("product_id") == F.col("_v_product")) & (F.col("_v_from") <= F.col("event_time"))
    newest = Window.partitionBy("partition", "offset").orderBy(
        F.col("_v_from").desc_nulls_last(),
        F.col("_v_partition").desc_nulls_last(),
        F.col("_v_offset").desc_nulls_last(),
    )
    return (
        events.join(versions, valid, "left")
        .withColumn("_rank", F.row_number().over(newest))
        .where(F.col("_rank") == 1)
        .withColumn("category", F.coalesce("_v_category", F.lit(UNKNOWN_CATEGORY)))
        .drop("_rank", "_v_product", "_v_category", "_v_from", "_v_partition", "_v_offset")
    )
