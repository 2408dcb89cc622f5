"""Revenue per tumbling window and product category (a stream-table join with the catalog)."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from event_log.decode import AMOUNT
from views.base import View, ViewContext
from views.catalog_join import with_category
from views.windows import bounds, tumbling

NAME = "revenue_by_category"
KEY = ("window_start", "category")


def compute(events: DataFrame, ctx: ViewContext) -> DataFrame:
    """Orders and revenue of purchases per 1-minute window x category.

    The category is the catalog's under the view's join rule (``views.catalog_join``).
    """
    purchases = with_category(events.where(F.col("event_type") == "purchase"), ctx, NAME)
    return (
        purchases.groupBy(
            tumbling("event_time", ctx.settings.tumbling_window).alias("window"), "category"
        )
        .agg(
            F.count("*").alias("orders"),
            F.sum(F.col("price") * F.col("quantity")).cast(AMOUNT).alias("revenue"),
        )
        .select(*bounds(), "category", "orders", "revenue")
    )


def merge(state: DataFrame) -> DataFrame:
    """Counts and sums add: exact for any split of the events."""
    return state.groupBy("window_start", "window_end", "category").agg(
        F.sum("orders").alias("orders"), F.sum("revenue").cast(AMOUNT).alias("revenue")
    )


VIEW = View(
    window="tumbling {tumbling_window}",
    name=NAME,
    key=KEY,
    settles_with="window_end",
    compute=compute,
    merge=merge,
    merge_rule="orders and revenue add per (window, category): exact for any split",
    order_by=KEY,
    split_by=KEY,
    non_negative=("orders", "revenue"),
    totals=lambda events, _: {
        "orders": F.count(F.when(F.col("event_type") == "purchase", 1)),
        "revenue": F.sum(
            F.when(F.col("event_type") == "purchase", F.col("price") * F.col("quantity"))
        ).cast(AMOUNT),
    },
)
