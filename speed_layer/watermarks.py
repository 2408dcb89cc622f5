"""Per-view watermarks, entered into a micro-batch's plans as data, and the late events.

An event older than a view's watermark is late for that view: flagged (``late_for``),
left out of the view and kept as a ``late`` row with the watermark it missed. The
watermarks change every micro-batch, so they enter the plans as a one-row table joined
in (:func:`parameters`), not as literals: Spark compiles literals into the code it
generates, and a literal that changed every micro-batch made it compile every stage
again (:mod:`speed_layer.micro_batch`, :mod:`lake.inline`).
"""

from __future__ import annotations

from datetime import datetime

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from event_log.schema import SHOP
from lake.inline import one_row, quoted


def watermark_column(view: str) -> str:
    """The :func:`parameters` column that holds ``view``'s watermark."""
    return f"_watermark:{view}"


def watermark(view: str) -> Column:
    """``view``'s watermark, in a plan joined with :func:`parameters`."""
    return F.col(quoted(watermark_column(view)))


def parameters(
    spark: SparkSession, batch_id: int, watermarks: dict[str, datetime | None]
) -> DataFrame:
    """A one-row table of what changes every micro-batch: its id and each view's watermark.

    Plans join it in (broadcast) instead of carrying the values as literals, so they stay
    the same from one micro-batch to the next (see the module docstring and
    :mod:`lake.inline`); broadcasting it runs no job.
    """
    columns: dict[str, tuple[object, str]] = {"batch_id": (int(batch_id), "bigint")}
    columns |= {watermark_column(name): (w, "timestamp") for name, w in watermarks.items()}
    return one_row(spark, columns)


def late_for(views: list[str], time: str = SHOP.time_field) -> Column:
    """The names of the views whose watermark (a :func:`parameters` column) the row is behind.

    ``time`` is the event-time column (the contract's). No watermark yet (null) means
    nothing is late.
    """
    if not views:
        return F.array().cast("array<string>")
    flags = [F.when(F.col(time) < watermark(name), F.lit(name)) for name in views]
    return F.filter(F.array(*flags), lambda x: x.isNotNull())


def late_rows(
    lane: str, events: DataFrame, params: DataFrame, views: list[str], columns: list[str]
) -> DataFrame:
    """Every (view, event) pair that was too late for the view, with its watermark.

    ``events`` carry ``late_for`` and ``batch_id``; ``params`` is the micro-batch's
    :func:`parameters`; ``columns`` are the event's fields.
    """
    by_view = F.create_map(*[x for name in views for x in (F.lit(name), watermark(name))])
    rows = events.where(F.size("late_for") > 0).select(
        F.lit(lane).alias("lane"),
        F.explode("late_for").alias("view"),
        "batch_id",
        *columns,
    )
    return rows.crossJoin(F.broadcast(params.drop("batch_id"))).select(
        "lane", "view", "batch_id", by_view[F.col("view")].alias("watermark"), *columns
    )
