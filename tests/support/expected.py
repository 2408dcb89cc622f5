"""What a serving view must equal: the oracle, less what the contract says a lane drops as late.

Lateness is decided by :func:`oracle.late_events` from the raw log and the micro-batch
boundaries the lane recorded, never from the platform's own list of late events.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pyspark.sql import SparkSession

import oracle
from lk.config import Settings
from lk.tables import Tables
from oracle import consume_all
from speed_layer import progress
from speed_layer.lane import find_lane
from tests.support.serving import read_served
from tests.support.workload import assert_view_matches
from views import default_registry


def lane_batches(spark: SparkSession, settings: Settings, lane: str) -> list[oracle.MicroBatch]:
    """The lane's committed micro-batches: offset ranges and the cutoff each ran under."""
    found = find_lane(spark, Tables.of(settings), lane)
    if found is None:
        return []
    return [
        oracle.MicroBatch(row.start_offsets, row.end_offsets, row.cutoff)
        for row in progress.history(spark, found)
        if row.kind == "micro-batch"
    ]


def expected_views(
    events: Sequence[oracle.RawRecord],
    catalog_for: Mapping[str, dict[int, str]] | dict[int, str],
    settings: Settings,
    batches: Sequence[oracle.MicroBatch] = (),
    cutoff: Mapping[int, int] | None = None,
) -> dict[str, list[dict]]:
    """Oracle views over the de-duplicated ``events`` a reader must be served.

    Args:
        events: the raw ``events`` log.
        catalog_for: the catalog state; with a ``cutoff``, ``{"batch": ..., "speed": ...}``
            (revenue joins events below the cutoff with the batch run's catalog).
        settings: platform settings (view settings, allowed lateness).
        batches: the streaming lane's micro-batches (none: nothing is late).
        cutoff: the served batch run's cutoff (Lambda), if any: events below it are
            served whatever their lateness.
    """
    decoded, _ = oracle.decode(events)
    unique = oracle.dedup(decoded)
    late = oracle.late_events(unique, batches, oracle.VIEW_NAMES, settings.views.lateness)
    cut = cutoff or {}
    result: dict[str, list[dict]] = {}
    for name in oracle.VIEW_NAMES:
        kept = [
            e
            for e in unique
            if e.offset < cut.get(e.partition, 0) or e.event_id not in late.get(name, set())
        ]
        if name != "revenue_by_category":
            result[name] = oracle.compute_views(kept, {}, settings.views)[name]
            continue
        if cutoff is None:
            result[name] = oracle.revenue_by_category(kept, catalog_for, settings.views)
            continue
        below = [e for e in kept if e.offset < cut.get(e.partition, 0)]
        above = [e for e in kept if e.offset >= cut.get(e.partition, 0)]
        result[name] = add_rows(
            oracle.revenue_by_category(below, catalog_for["batch"], settings.views)
            + oracle.revenue_by_category(above, catalog_for["speed"], settings.views),
            key=("window_start", "window_end", "category"),
            sums=("orders", "revenue"),
        )
    return result


def assert_served_per_contract(
    spark: SparkSession,
    settings: Settings,
    lane: str,
    *,
    cutoff: Mapping[int, int] | None = None,
    batch_catalog: dict[int, str] | None = None,
) -> list[oracle.RawRecord]:
    """Every served view equals the oracle's, given the lane's micro-batches; the log read.

    Args:
        spark: the test session.
        settings: where the platform runs.
        lane: the streaming lane whose lateness decisions the contract replays.
        cutoff: the served batch run's cutoff (Lambda), if any.
        batch_catalog: the catalog that run joined with (default: the catalog now).
    """
    events = consume_all(settings, settings.kafka.events_topic)
    catalog = oracle.catalog_state(consume_all(settings, settings.kafka.catalog_topic))
    joined = catalog if cutoff is None else {"batch": batch_catalog or catalog, "speed": catalog}
    expected = expected_views(
        events, joined, settings, lane_batches(spark, settings, lane), cutoff=cutoff
    )
    for view in default_registry():
        assert_view_matches(read_served(spark, settings, view.name), expected[view.name], view.name)
    return events


def late_counts(
    events: Sequence[oracle.RawRecord], settings: Settings, batches: Sequence[oracle.MicroBatch]
) -> dict[str, int]:
    """How many events the contract makes late per view (to check a scenario has some)."""
    decoded, _ = oracle.decode(events)
    late = oracle.late_events(
        oracle.dedup(decoded), batches, oracle.VIEW_NAMES, settings.views.lateness
    )
    return {view: len(ids) for view, ids in late.items()}


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
