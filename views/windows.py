"""Window helpers shared by the windowed views (epoch-aligned, UTC)."""

from __future__ import annotations

from datetime import datetime, timedelta

from pyspark.sql import Column
from pyspark.sql import functions as F

from config.settings import format_duration


def tumbling(time_column: str, size: timedelta) -> Column:
    """Tumbling window struct of ``time_column``."""
    return F.window(time_column, format_duration(size))


def hopping_starts(pane_start: str, size: timedelta, slide: timedelta) -> Column:
    """Starts of the ``size / slide`` hopping windows that hold the pane at ``pane_start``.

    A hopping window is the union of the ``size / slide`` panes (tumbling windows of
    ``slide``) it spans, so a windowed aggregate that merges can aggregate each event into
    its one pane and then each pane into its windows, instead of each event into every
    window: ``size / slide`` times fewer rows to aggregate.
    """
    first = F.col(pane_start) - F.expr(f"INTERVAL {format_duration(size - slide)}")
    return F.sequence(first, F.col(pane_start), F.expr(f"INTERVAL {format_duration(slide)}"))


def bounds(window: str = "window") -> list[Column]:
    """``window_start`` and ``window_end`` columns out of a window struct."""
    return [
        F.col(f"{window}.start").alias("window_start"),
        F.col(f"{window}.end").alias("window_end"),
    ]


def floor_to(moment: datetime, step: timedelta) -> datetime:
    """``moment`` rounded down to a whole multiple of ``step`` (counted from 0001-01-01)."""
    return moment - (moment - datetime.min) % step
