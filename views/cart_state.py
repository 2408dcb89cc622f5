"""Each user's current cart, folded from cart events (event sourcing: state = integral)."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from views.base import View, ViewContext

KEY = ("user_id", "product_id")


def quantity_change() -> Column:
    """+quantity for an add, -quantity for a remove or a purchase, null otherwise."""
    kind = F.col("event_type")
    return F.when(kind == "add_to_cart", F.col("quantity")).when(
        kind.isin("remove_from_cart", "purchase"), -F.col("quantity")
    )


def compute(events: DataFrame, ctx: ViewContext) -> DataFrame:
    """Sum of quantity changes per cart line; ``updated_at`` = latest event touching it."""
    return (
        events.where(quantity_change().isNotNull())
        .groupBy("user_id", "product_id")
        .agg(F.sum(quantity_change()).alias("quantity"), F.max("event_time").alias("updated_at"))
    )


def merge(state: DataFrame) -> DataFrame:
    """Quantities add and the latest time wins: exact for any split, in any order."""
    return state.groupBy("user_id", "product_id").agg(
        F.sum("quantity").alias("quantity"), F.max("updated_at").alias("updated_at")
    )


def present(state: DataFrame) -> DataFrame:
    """Lines at zero are not shown; a negative line shows a missing event."""
    return state.where(F.col("quantity") != 0).select(
        "user_id", "product_id", "quantity", "updated_at"
    )


VIEW = View(
    name="cart_state",
    key=KEY,
    settles_with="updated_at",
    compute=compute,
    merge=merge,
    merge_rule="quantity changes add per (user, product), latest updated_at wins: exact",
    present=present,
    order_by=KEY,
    split_by=KEY,
    totals=lambda events, _: {"quantity": F.coalesce(F.sum(quantity_change()), F.lit(0))},
)
