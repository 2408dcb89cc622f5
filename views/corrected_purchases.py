"""Purchases per minute of *corrected* event time: each device's clock offset removed.

Three timestamps: the device stamps ``event_time`` and ``sent_time`` with its own clock,
the log stamps the append time (``kafka_timestamp``) with its own. ``sent_time -
append_time`` is the device's offset less the transit delay; the lower median over a
device's (user's) events estimates the offset, robust to the odd slow send, and the
corrected event time is ``event_time - offset``.

The offset of a device needs all its events, so the state is the events themselves (one
row per event: its time, whether it is a purchase, its offset sample; a set, merged by
union) and the estimate and the windows happen on presentation over the merged state:
exact for any split. Each row carries the window size it was computed with.
"""

from __future__ import annotations

from datetime import timedelta

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from views.base import View, ViewContext

KEY = ("window_start",)
_MS = timedelta(milliseconds=1)


def sample_ms() -> F.Column:
    """``sent_time - append_time`` in ms (null unless both are known)."""
    return F.unix_millis("sent_time") - F.unix_millis("kafka_timestamp")


def compute(events: DataFrame, ctx: ViewContext) -> DataFrame:
    """One state row per event that is a purchase or carries an offset sample."""
    purchase = F.col("event_type") == "purchase"
    return events.where(purchase | sample_ms().isNotNull()).select(
        "user_id",
        "event_id",
        "event_time",
        purchase.alias("_purchase"),
        sample_ms().alias("_sample_ms"),
        F.lit(ctx.settings.tumbling_window // _MS).cast("long").alias("_window_ms"),
    )


def merge(state: DataFrame) -> DataFrame:
    """A set of events: copies of one event (the same id) are one row. Exact."""
    return state.groupBy("user_id", "event_id").agg(
        *[F.max(c).alias(c) for c in ("event_time", "_purchase", "_sample_ms", "_window_ms")]
    )


def device_offsets(state: DataFrame) -> DataFrame:
    """``user_id, _offset_ms``: the lower median of each user's samples."""
    samples = state.where(F.col("_sample_ms").isNotNull())
    ordered = Window.partitionBy("user_id").orderBy("_sample_ms", "event_id")
    whole = Window.partitionBy("user_id")
    return (
        samples.withColumn("_rank", F.row_number().over(ordered))
        .withColumn("_n", F.count("*").over(whole))
        .where(F.col("_rank") == F.floor((F.col("_n") + 1) / 2))
        .select("user_id", F.col("_sample_ms").alias("_offset_ms"))
    )


def present(state: DataFrame) -> DataFrame:
    """Purchases per tumbling window of ``event_time - offset`` of their user."""
    purchases = state.where(F.col("_purchase"))
    corrected = F.unix_millis("event_time") - F.coalesce("_offset_ms", F.lit(0))
    start = F.col("_t") - F.pmod(F.col("_t"), F.col("_window_ms"))
    return (
        purchases.join(device_offsets(state), "user_id", "left")
        .withColumn("_t", corrected)
        .groupBy(start.alias("_start"), "_window_ms")
        .agg(F.count("*").alias("purchases"))
        .select(
            F.timestamp_millis("_start").alias("window_start"),
            F.timestamp_millis(F.col("_start") + F.col("_window_ms")).alias("window_end"),
            "purchases",
        )
    )


VIEW = View(
    window="tumbling {tumbling_window} of corrected event time",
    name="corrected_purchases",
    key=KEY,
    settles_with="window_end",
    compute=compute,
    merge=merge,
    merge_rule=(
        "state is the set of events (one row each, union); offsets and windows are computed "
        "over the merged set when read: exact for any split"
    ),
    present=present,
    order_by=KEY,
    non_negative=("purchases",),
    totals=lambda events, _: {"purchases": F.count(F.when(F.col("event_type") == "purchase", 1))},
    compaction="pack",
)
