"""What sits in carts per product, valued at the catalog's price: a table-table join.

Two changelogs meet: the catalog's CDC stream (the latest row per product wins, a
tombstone deletes it) and the per-product cart totals folded from the events (adds minus
removes minus purchases, as ``cart_state``). The view is their inner join, kept current
when either side changes: a new price or category re-values the product's row, a delete
on either side (a catalog tombstone, or a total back at zero) removes it.

Both sides live in the state, one row per product: the cart total (changes add) and the
newest catalog change this computation saw, with its log position (the later position
wins). Every computation (a batch run, each micro-batch) contributes the catalog as it
read it, so merging keeps the newest the layer has seen: the catalog side is as current
as the layer's latest computation, like every stream-table join here.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from event_log.decode import AMOUNT
from views.base import View, ViewContext
from views.cart_state import quantity_change

KEY = ("product_id",)


def _position() -> Column:
    """A change's place in the catalog log, as one orderable number (partition, offset)."""
    return (F.col("partition").cast("long") * F.lit(1 << 40)) + F.col("offset")


def compute(events: DataFrame, ctx: ViewContext) -> DataFrame:
    """Per product: the cart total of ``events`` and the newest catalog change read."""
    if ctx.catalog_versions is None:
        raise ValueError("cart_value_by_product needs the catalog's changes in its ViewContext")
    carts = (
        events.where(quantity_change().isNotNull())
        .groupBy("product_id")
        .agg(F.sum(quantity_change()).cast("long").alias("in_carts"))
        .select(
            "product_id",
            "in_carts",
            F.lit(None).cast("long").alias("_position"),
            F.lit(None).cast("string").alias("_category"),
            F.lit(None).cast("decimal(12,2)").alias("_price"),
        )
    )
    catalog = ctx.catalog_versions.select(
        "product_id",
        F.lit(0).cast("long").alias("in_carts"),
        _position().alias("_position"),
        F.col("category").alias("_category"),
        F.col("price").alias("_price"),
    )
    return merge(carts.unionByName(catalog))


def merge(state: DataFrame) -> DataFrame:
    """Cart totals add; of the catalog changes, the one at the latest log position wins."""
    newest = F.max_by(F.struct("_category", "_price"), "_position")
    return (
        state.groupBy("product_id")
        .agg(
            F.sum("in_carts").alias("in_carts"),
            F.max("_position").alias("_position"),
            newest.alias("_row"),
        )
        .select(
            "product_id",
            "in_carts",
            "_position",
            F.col("_row._category").alias("_category"),
            F.col("_row._price").alias("_price"),
        )
    )


def present(state: DataFrame) -> DataFrame:
    """The inner join: products in the catalog (not deleted) with a non-zero cart total."""
    return state.where(F.col("_category").isNotNull() & (F.col("in_carts") != 0)).select(
        "product_id",
        F.col("_category").alias("category"),
        F.col("_price").alias("price"),
        "in_carts",
        (F.col("in_carts") * F.col("_price")).cast(AMOUNT).alias("cart_value"),
    )


VIEW = View(
    name="cart_value_by_product",
    key=KEY,
    compute=compute,
    merge=merge,
    merge_rule=(
        "per product: cart totals add, the catalog change at the latest log position wins "
        "(a delete too): exact for any split"
    ),
    present=present,
    order_by=KEY,
    split_by=KEY,
)
