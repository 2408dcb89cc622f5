"""Purchases per minute and how many followed a view of the same product (stream-stream join)."""

from __future__ import annotations

from datetime import datetime, timedelta

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from config.settings import ViewSettings, format_duration
from views.base import View, ViewContext
from views.windows import bounds, tumbling

KEY = ("window_start",)


def compute(events: DataFrame, ctx: ViewContext) -> DataFrame:
    """One state row per purchase: its window and whether a matching view precedes it.

    A purchase converts when the same user viewed the same product at most
    ``conversion_lookback`` before it (both ends inclusive).
    """
    settings = ctx.settings
    purchases = events.where(F.col("event_type") == "purchase").select(
        "event_id",
        "user_id",
        "product_id",
        tumbling("event_time", settings.conversion_window).alias("window"),
        F.col("event_time").alias("_purchase_time"),
    )
    views = events.where(F.col("event_type") == "page_view").select(
        F.col("user_id").alias("_v_user"),
        F.col("product_id").alias("_v_product"),
        F.col("event_time").alias("_view_time"),
    )
    lookback = _interval(settings)
    matches = (
        (F.col("user_id") == F.col("_v_user"))
        & (F.col("product_id") == F.col("_v_product"))
        & (F.col("_view_time") <= F.col("_purchase_time"))
        & (F.col("_view_time") >= F.col("_purchase_time") - lookback)
    )
    # a semi-join and an anti-join over the same two exchanges (Spark reuses them):
    # each purchase flagged in one pass, with no distinct and no join back
    return (
        purchases.join(views, matches, "left_semi")
        .withColumn("converted", F.lit(True))
        .unionByName(
            purchases.join(views, matches, "left_anti").withColumn("converted", F.lit(False))
        )
        .select(*bounds(), "event_id", "converted")
    )


def partners(own: DataFrame, earlier: DataFrame, settings: ViewSettings) -> DataFrame:
    """The earlier events that can still meet one of ``own`` in this join.

    Page views of the same user and product that a purchase of ``own`` may follow
    (within the look-back before it), and purchases that a page view of ``own`` may
    precede (within the look-back after it). Any other earlier event either meets no
    event of ``own`` or met its partner when it arrived, and the OR merge keeps that.
    Bounded per (user, product) by the earliest and latest times in ``own``. Those
    bounds are broadcast: at most one row per pair in ``own``, so the earlier events (a
    live lane's whole look-back) are filtered where they are read, not shuffled first.
    """
    time = F.col("event_time")
    kind = F.col("event_type")
    wanted = own.groupBy(
        F.col("user_id").alias("_user"), F.col("product_id").alias("_product")
    ).agg(
        F.min(F.when(kind == "purchase", time)).alias("_first_purchase"),
        F.max(F.when(kind == "purchase", time)).alias("_last_purchase"),
        F.min(F.when(kind == "page_view", time)).alias("_first_view"),
        F.max(F.when(kind == "page_view", time)).alias("_last_view"),
    )
    lookback = _interval(settings)
    a_view = (kind == "page_view") & time.between(
        F.col("_first_purchase") - lookback, F.col("_last_purchase")
    )
    a_purchase = (kind == "purchase") & time.between(
        F.col("_first_view"), F.col("_last_view") + lookback
    )
    same_pair = (F.col("user_id") == F.col("_user")) & (F.col("product_id") == F.col("_product"))
    return earlier.join(F.broadcast(wanted), same_pair & (a_view | a_purchase), "left_semi")


def context_kept(
    events: DataFrame, settings: ViewSettings, watermark: datetime | None
) -> DataFrame:
    """Of earlier events, the ones a later event can still meet in this join.

    Page views: of one user's views of one product in a step of time as long as the
    look-back, the first and the last. A later purchase whose look-back holds a view of
    the step holds one of those two: the first when the purchase is inside the step (its
    look-back reaches back past the step's start), the last when its look-back starts
    inside the step (it ends past the step's end). So a lane keeps at most two views
    per user, product and step, however many it read. Purchases: a later page view
    meets a purchase at or after it, and every page view still to come is on time (at
    or after ``watermark``), so a purchase before the watermark meets none. Other
    events meet nothing.
    """
    time, kind = F.col("event_time"), F.col("event_type")
    purchases = events.where(kind == "purchase")
    if watermark is not None:
        purchases = purchases.where(time >= F.lit(watermark))
    step_us = settings.conversion_lookback // timedelta(microseconds=1)
    step = F.floor(F.unix_micros(time) / F.lit(step_us))
    row = F.struct(*[F.col(f"`{c}`") for c in events.columns])
    ends = (
        events.where(kind == "page_view")
        .groupBy("user_id", "product_id", step.alias("_step"))
        .agg(F.array_distinct(F.array(F.min_by(row, time), F.max_by(row, time))).alias("_ends"))
    )
    views = ends.select(F.explode("_ends").alias("_end")).select("_end.*")
    return purchases.unionByName(views)


def _interval(settings: ViewSettings) -> Column:
    return F.expr(f"INTERVAL {format_duration(settings.conversion_lookback)}")


def merge(state: DataFrame) -> DataFrame:
    """A purchase is converted if any partial result found a matching view (logical OR)."""
    return state.groupBy("window_start", "window_end", "event_id").agg(
        F.max("converted").alias("converted")
    )


def present(state: DataFrame) -> DataFrame:
    """Per window: purchases, and purchases converted (each purchase counted once)."""
    return state.groupBy("window_start", "window_end").agg(
        F.count("*").alias("purchases"),
        F.count(F.when(F.col("converted"), 1)).alias("converted"),
    )


VIEW = View(
    window="tumbling {conversion_window}, look-back {conversion_lookback}",
    name="conversions",
    key=KEY,
    settles_with="window_end",
    compute=compute,
    merge=merge,
    merge_rule=(
        "state is one row per purchase; merged by OR of 'converted'. Exact only when each "
        "side saw the views it needs: the streaming layers keep page views for the "
        "look-back (a stream-stream join), and a purchase whose view lies across the "
        "batch cutoff is provisional until the next batch"
    ),
    present=present,
    order_by=KEY,
    context_lookback=lambda settings: settings.conversion_lookback,
    partners=partners,
    context_kept=context_kept,
    non_negative=("purchases", "converted"),
    totals=lambda events, _: {"purchases": F.count(F.when(F.col("event_type") == "purchase", 1))},
    compaction="pack",
)
