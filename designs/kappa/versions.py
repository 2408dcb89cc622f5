"""Kappa versions of the views and the pointer that says which one serves.

Each version ``v{n}`` is a lane (``root/kappa/v{n}``) built by the streaming code from
offset 0, with the view settings frozen at its creation. The pointer is an append-only
Delta log: its newest row names the serving version, so a switch is one atomic commit
and every switch stays on record (publish, rollback, drop).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from config.errors import LkError
from config.settings import Settings, ViewSettings
from lake import storage
from lake.inline import row_of
from lake.source import Label, ServingSource, ViewNotReadyError
from lake.tables import Tables
from serving_layer.alerts import Published, publish_served
from speed_layer import progress
from speed_layer.lane import Lane, find_lane, open_lane
from speed_layer.lane_log import state_table
from views.base import View
from views.registry import ViewRegistry

POINTER_COLUMNS = {"version": "int", "action": "string", "at": "timestamp", "note": "string"}
EPOCH = "kappa"
_VERSION = re.compile(r"^v(\d+)$")


class KappaError(LkError, RuntimeError):
    """A Kappa operation that cannot be done (nothing to roll back to, drop the live one...)."""


@dataclass(frozen=True)
class Switch:
    """One row of the pointer log."""

    version: int
    action: str
    at: datetime
    note: str


def lane_name(version: int) -> str:
    """``3`` -> ``kappa-v3``."""
    return f"kappa-v{version}"


def pointer_path(tables: Tables) -> str:
    """The pointer log's location."""
    return tables.path("kappa", "pointer")


def switches(spark: SparkSession, tables: Tables) -> list[Switch]:
    """Every pointer change, oldest first."""
    if not storage.is_delta_table(spark, pointer_path(tables)):
        return []
    rows = spark.read.format("delta").load(pointer_path(tables)).orderBy("at").collect()
    return [Switch(r.version, r.action, r.at, r.note or "") for r in rows]


def serving_version(spark: SparkSession, tables: Tables) -> int | None:
    """The version readers are switched to, if any."""
    if not storage.is_delta_table(spark, pointer_path(tables)):
        return None
    row = (
        spark.read.format("delta")
        .load(pointer_path(tables))
        .orderBy(F.col("at").desc())
        .limit(1)
        .collect()
    )
    return row[0].version if row else None


def point_to(
    spark: SparkSession, tables: Tables, version: int, action: str, note: str = ""
) -> None:
    """Switch readers to ``version`` (one atomic append)."""
    row = (version, action, datetime.now(UTC).replace(tzinfo=None), note)
    row_of(spark, POINTER_COLUMNS, row).write.format("delta").mode("append").save(
        pointer_path(tables)
    )


def existing_versions(spark: SparkSession, tables: Tables) -> list[int]:
    """Versions that have a lane on storage, ascending."""
    names = storage.list_dirs(spark, tables.path("kappa"))
    found = [int(m.group(1)) for n in names if (m := _VERSION.match(n))]
    return sorted(v for v in found if find_lane(spark, tables, lane_name(v)) is not None)


def open_version(spark: SparkSession, settings: Settings, version: int) -> Lane:
    """A version's lane (created with the current view settings if new)."""
    return open_lane(spark, Tables.of(settings), lane_name(version), settings.views)


def version_settings(settings: Settings, lane: Lane) -> Settings:
    """``settings`` with the view settings frozen into ``lane``."""
    if not lane.views:
        return settings
    return settings.model_copy(update={"views": ViewSettings.model_validate(lane.views)})


def presented(spark: SparkSession, settings: Settings, version: int, view: View) -> DataFrame:
    """The rows readers would be served of ``view`` from ``version``."""
    lane = open_version(spark, settings, version)
    return view.serve(state_table(lane, EPOCH, view.name).read(spark))


def settled(clock: datetime | None) -> Label:
    """Kappa's rule: a row is final once its ``settles_with`` time is behind the watermark.

    The watermark is the lane's event-time ``clock`` less the view's allowed lateness:
    events later than that are excluded for good, so such a row can no longer change.
    """

    def label(
        spark: SparkSession, view: View, rows: DataFrame, settings: ViewSettings
    ) -> DataFrame:
        if clock is None or view.settles_with is None:
            return rows.withColumn("status", F.lit("provisional"))
        watermark = clock - settings.lateness(view.name)
        return rows.withColumn(
            "status",
            F.when(F.col(view.settles_with) <= F.lit(watermark), "final").otherwise("provisional"),
        )

    return label


def kappa_source(spark: SparkSession, tables: Tables, registry: ViewRegistry) -> ServingSource:
    """The serving source in Kappa mode: the pointer's version."""
    version = serving_version(spark, tables)
    lane = find_lane(spark, tables, lane_name(version)) if version is not None else None
    if lane is None:
        raise ViewNotReadyError("no Kappa version serves yet: run `lk kappa reprocess`")
    state = {v.name: state_table(lane, EPOCH, v.name) for v in registry}
    last = progress.latest(spark, lane)
    clock = last.max_event_time if last else None
    return ServingSource(
        f"kappa v{version}", state, settled(clock), watched=(pointer_path(tables),), clock=clock
    )


def publish_alerts(
    spark: SparkSession, settings: Settings, registry: ViewRegistry
) -> Published | None:
    """Kappa's alerts: what the pointer's version serves (a replaying version never publishes)."""
    tables = Tables.of(settings)
    return publish_served(
        spark, settings, registry, "kappa", lambda s: kappa_source(s, tables, registry)
    )
