"""What a serving view must equal: the oracle, less the events a view counted as late."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence

from pyspark.sql import SparkSession

import oracle
from lk import storage
from lk.config import Settings
from lk.tables import Tables
from speed_layer.lane import open_lane


def late_event_ids(spark: SparkSession, settings: Settings, lane: str) -> dict[str, set[str]]:
    """``view -> event ids`` the lane excluded as later than the view's watermark."""
    path = open_lane(spark, Tables.of(settings), lane).late_events
    if not storage.is_delta_table(spark, path):
        return {}
    rows = spark.read.format("delta").load(path).select("view", "event_id").collect()
    late: dict[str, set[str]] = defaultdict(set)
    for row in rows:
        late[row.view].add(row.event_id)
    return late


def expected_views(
    events: Sequence[oracle.RawRecord],
    catalog_for: Mapping[str, dict[int, str]] | dict[int, str],
    settings: Settings,
    late: Mapping[str, set[str]],
    cutoff: Mapping[int, int] | None = None,
) -> dict[str, list[dict]]:
    """Oracle views over de-duplicated ``events`` minus each view's late events.

    With a ``cutoff``, revenue joins events below it with ``catalog_for["batch"]`` and the
    rest with ``catalog_for["speed"]``, as the batch and speed layers did.
    """
    decoded, _ = oracle.decode(events)
    unique = oracle.dedup(decoded)
    result: dict[str, list[dict]] = {}
    for name in oracle.VIEW_NAMES:
        kept = [e for e in unique if e.event_id not in late.get(name, set())]
        if name != "revenue_by_category":
            result[name] = oracle.compute_views(kept, {}, settings.views)[name]
            continue
        if cutoff is None:
            result[name] = oracle.revenue_by_category(kept, catalog_for, settings.views)
            continue
        below = [e for e in kept if e.offset < cutoff.get(e.partition, 0)]
        above = [e for e in kept if e.offset >= cutoff.get(e.partition, 0)]
        result[name] = add_rows(
            oracle.revenue_by_category(below, catalog_for["batch"], settings.views)
            + oracle.revenue_by_category(above, catalog_for["speed"], settings.views),
            key=("window_start", "window_end", "category"),
            sums=("orders", "revenue"),
        )
    return result


def add_rows(rows: list[dict], key: tuple[str, ...], sums: tuple[str, ...]) -> list[dict]:
    """Sum rows that share a key (an additive merge, done by hand for the oracle)."""
    merged: dict[tuple, dict] = {}
    for row in rows:
        k = tuple(row[c] for c in key)
        if k in merged:
            for column in sums:
                merged[k][column] += row[column]
        else:
            merged[k] = dict(row)
    return [merged[k] for k in sorted(merged)]
