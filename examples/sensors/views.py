"""The example's views, registered with the same ``View`` API the built-in shop views use.

* ``site_temperature``: per site and tumbling 5-minute window, the readings, the mean and
  the maximum temperature.
* ``sensor_activity``: per sensor and hopping 15-minute window every 5 minutes, the
  readings and the temperature range.

Both merge exactly: counts and sums add, minima and maxima take the extreme, so any
split of the readings (batch runs, micro-batches, replays) gives the same rows. The window
sizes are settings of the views (``views.options`` in ``lk.yaml``), so a logic change is a
setting: ``lk compare --change site_temperature.window="10 minutes"``.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from config.settings import ViewSettings, parse_duration
from views import View, ViewContext

KEEP_BUILT_IN = ()  # the shop views read shop events: none of them applies here


def _bounds() -> list:
    return [F.col("w.start").alias("window_start"), F.col("w.end").alias("window_end")]


def _setting(ctx: ViewContext, view: str, name: str, default: str) -> str:
    """A window size from ``views.options`` (a duration string Spark reads)."""
    value = ctx.settings.option(view, name, default)
    return value if isinstance(value, str) else f"{int(value.total_seconds())} seconds"


def _windows_per_reading(settings: ViewSettings) -> int:
    """How many hopping ``sensor_activity`` windows hold one reading (window / slide)."""
    size = parse_duration(settings.option("sensor_activity", "window", "15 minutes"))
    slide = parse_duration(settings.option("sensor_activity", "slide", "5 minutes"))
    return int(size / slide)


def site_compute(events: DataFrame, ctx: ViewContext) -> DataFrame:
    """Readings per site and window (5 minutes by default), with what the mean needs."""
    size = _setting(ctx, "site_temperature", "window", "5 minutes")
    return (
        events.groupBy(F.window("measured_at", size).alias("w"), "site")
        .agg(
            F.count("*").alias("readings"),
            F.sum("temperature_c").alias("_temperature_sum"),
            F.max("temperature_c").alias("max_temperature_c"),
        )
        .select(*_bounds(), "site", "readings", "_temperature_sum", "max_temperature_c")
    )


def site_merge(state: DataFrame) -> DataFrame:
    """Counts and sums add; the maximum of maxima."""
    return state.groupBy("window_start", "window_end", "site").agg(
        F.sum("readings").alias("readings"),
        F.sum("_temperature_sum").alias("_temperature_sum"),
        F.max("max_temperature_c").alias("max_temperature_c"),
    )


def site_present(state: DataFrame) -> DataFrame:
    """The mean from the merged sum and count; the sum itself stays internal."""
    mean = F.round(F.col("_temperature_sum") / F.col("readings"), 3)
    return state.select(
        "window_start",
        "window_end",
        "site",
        "readings",
        mean.alias("mean_temperature_c"),
        "max_temperature_c",
    )


def activity_compute(events: DataFrame, ctx: ViewContext) -> DataFrame:
    """Readings and temperature range per sensor, in every 15-minute window that holds them."""
    size = _setting(ctx, "sensor_activity", "window", "15 minutes")
    slide = _setting(ctx, "sensor_activity", "slide", "5 minutes")
    return (
        events.groupBy(F.window("measured_at", size, slide).alias("w"), "sensor_id")
        .agg(
            F.count("*").alias("readings"),
            F.min("temperature_c").alias("min_temperature_c"),
            F.max("temperature_c").alias("max_temperature_c"),
        )
        .select(*_bounds(), "sensor_id", "readings", "min_temperature_c", "max_temperature_c")
    )


def activity_merge(state: DataFrame) -> DataFrame:
    """Counts add; minima and maxima take the extreme."""
    return state.groupBy("window_start", "window_end", "sensor_id").agg(
        F.sum("readings").alias("readings"),
        F.min("min_temperature_c").alias("min_temperature_c"),
        F.max("max_temperature_c").alias("max_temperature_c"),
    )


VIEWS = (
    View(
        name="site_temperature",
        key=("window_start", "site"),
        compute=site_compute,
        merge=site_merge,
        present=site_present,
        merge_rule="readings and temperature sums add, maxima take the max: exact for any split",
        order_by=("window_start", "site"),
        settles_with="window_end",
        window="tumbling 5 min",
        non_negative=("readings",),
        totals=lambda events, _: {"readings": F.count("*")},
    ),
    View(
        name="sensor_activity",
        key=("window_start", "sensor_id"),
        compute=activity_compute,
        merge=activity_merge,
        merge_rule="readings add, min/max take the extreme: exact for any split",
        order_by=("window_start", "sensor_id"),
        settles_with="window_end",
        window="hopping 15 min every 5 min",
        non_negative=("readings",),
        # every reading lies in window / slide hopping windows
        totals=lambda events, settings: {"readings": F.count("*") * _windows_per_reading(settings)},
    ),
)
