"""Per-user session windows (30-minute gap) with their events, purchases and revenue."""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from config.settings import format_duration
from event_log.decode import AMOUNT
from views.base import View, ViewContext

KEY = ("user_id", "session_start")


def _purchase() -> Column:
    return F.col("event_type") == "purchase"


def compute(events: DataFrame, ctx: ViewContext) -> DataFrame:
    """Spark session windows per user: an event more than ``gap`` after the last starts anew."""
    session = F.session_window("event_time", format_duration(ctx.settings.session_gap)).alias("s")
    return (
        events.groupBy("user_id", session)
        .agg(
            F.count("*").alias("events"),
            F.count(F.when(_purchase(), 1)).alias("purchases"),
            F.coalesce(F.sum(F.when(_purchase(), F.col("price") * F.col("quantity"))), F.lit(0))
            .cast(AMOUNT)
            .alias("revenue"),
        )
        .select(
            "user_id",
            F.col("s.start").alias("session_start"),
            F.col("s.end").alias("session_end"),
            "events",
            "purchases",
            "revenue",
        )
    )


def merge(state: DataFrame) -> DataFrame:
    """Sessions of one user whose spans overlap or touch merge (start <= the other's end).

    A session ends ``gap`` after its last event, so two partial sessions touch exactly
    when some event of one lies at most ``gap`` after an event of the other: the union
    is the sessionization of all their events. Exact for any split.
    """
    ordered = Window.partitionBy("user_id").orderBy("session_start", "session_end")
    reach = F.max("session_end").over(ordered.rowsBetween(Window.unboundedPreceding, -1))
    starts_new = F.when(reach.isNull() | (F.col("session_start") > reach), 1).otherwise(0)
    grouped = state.withColumn("_new", starts_new).withColumn(
        "_group", F.sum("_new").over(ordered.rowsBetween(Window.unboundedPreceding, 0))
    )
    return (
        grouped.groupBy("user_id", "_group")
        .agg(
            F.min("session_start").alias("session_start"),
            F.max("session_end").alias("session_end"),
            F.sum("events").alias("events"),
            F.sum("purchases").alias("purchases"),
            F.sum("revenue").cast(AMOUNT).alias("revenue"),
        )
        .drop("_group")
    )


VIEW = View(
    window="session, gap {session_gap}",
    name="user_sessions",
    key=KEY,
    settles_with="session_end",
    compute=compute,
    merge=merge,
    merge_rule=(
        "by user: overlapping sessions merge into one (min start, max end, sums add); exact "
        "for any split, but a late event can still join two sessions, so rows near the "
        "watermark are provisional"
    ),
    order_by=KEY,
    split_by=("user_id",),
    non_negative=("events", "purchases", "revenue"),
    totals=lambda events, _: {
        "events": F.count("*"),
        "purchases": F.count(F.when(_purchase(), 1)),
    },
)
