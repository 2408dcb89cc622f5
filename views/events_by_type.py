"""Event counts and distinct users per hopping window and event type."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from config.settings import format_duration
from views.base import View, ViewContext
from views.windows import hopping_starts, tumbling

KEY = ("window_start", "event_type")


def _with_counts(state: DataFrame) -> DataFrame:
    return state.withColumns(
        {
            "distinct_users": F.size("_user_ids").cast("long"),
            "distinct_users_approx": F.hll_sketch_estimate("_users_sketch"),
        }
    ).select(
        "window_start",
        "window_end",
        "event_type",
        "events",
        "distinct_users",
        "distinct_users_approx",
        "_users_sketch",
        "_user_ids",
    )


def compute(events: DataFrame, ctx: ViewContext) -> DataFrame:
    """Per 10-minute window sliding by 1 minute x event type: events, exact and HLL users.

    Each event is aggregated once, into its 1-minute pane; each pane then into the ten
    windows that hold it, with the merge rule (:func:`merge`).
    """
    settings = ctx.settings
    panes = events.groupBy(
        tumbling("event_time", settings.hop_slide).start.alias("pane_start"), "event_type"
    ).agg(
        F.count("*").alias("events"),
        F.hll_sketch_agg("user_id", settings.hll_lg_k).alias("_users_sketch"),
        F.sort_array(F.collect_set("user_id")).alias("_user_ids"),
    )
    in_windows = panes.select(
        F.explode(hopping_starts("pane_start", settings.hop_window, settings.hop_slide)).alias(
            "window_start"
        ),
        "event_type",
        "events",
        "_users_sketch",
        "_user_ids",
    ).withColumn(
        "window_end",
        F.col("window_start") + F.expr(f"INTERVAL {format_duration(settings.hop_window)}"),
    )
    return merge(in_windows)


def merge(state: DataFrame) -> DataFrame:
    """Counts add, HLL sketches union, user-id sets union: exact for any split."""
    merged = state.groupBy("window_start", "window_end", "event_type").agg(
        F.sum("events").alias("events"),
        F.hll_union_agg("_users_sketch").alias("_users_sketch"),
        F.sort_array(F.array_distinct(F.flatten(F.collect_list("_user_ids")))).alias("_user_ids"),
    )
    return _with_counts(merged)


VIEW = View(
    window="hopping {hop_window} every {hop_slide}",
    name="events_by_type",
    key=KEY,
    settles_with="window_end",
    compute=compute,
    merge=merge,
    merge_rule=(
        "events add; the HLL sketch of users unions (mergeable sketch); the exact user set "
        "unions: exact for any split"
    ),
    order_by=KEY,
    split_by=KEY,
    non_negative=("events", "distinct_users", "distinct_users_approx"),
    totals=lambda events, settings: {
        "events": F.count("*") * (settings.hop_window // settings.hop_slide),
    },
)
