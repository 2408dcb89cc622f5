"""Read what readers are served, through the platform the wiring builds (as the CLI does)."""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession

from config.settings import Settings
from designs.platform import build
from lake.source import ServingSource
from views.base import View


def read_served(
    spark: SparkSession, settings: Settings, name: str, *, with_status: bool = False
) -> DataFrame:
    """Presented rows of view ``name`` in the configured mode."""
    return build(settings).read(spark, name, with_status=with_status)


def source_of(spark: SparkSession, settings: Settings) -> ServingSource:
    """The serving source in the configured mode."""
    return build(settings).serving_source(spark)


def passthrough_view(name: str, order_by: tuple[str, ...] = ()) -> View:
    """A view whose state is its input, served as stored (for tests of serving itself)."""
    return View(
        name=name,
        key=("id",),
        compute=lambda events, ctx: events,
        merge=lambda state: state,
        merge_rule="test only",
        order_by=order_by,
    )
