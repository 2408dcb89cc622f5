"""What a serving view must equal: the oracle, less what the contract says a lane drops as late.

Lateness is decided by :func:`oracle.late_events` from the raw log and the micro-batch
boundaries the lane recorded, never from the platform's own list of late events.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pyspark.sql import SparkSession

import oracle
from chaos.verify import lane_batches
from config.settings import Settings
from oracle import consume_all
from tests.support.serving import read_served
from tests.support.workload import assert_view_matches
from views import default_registry


def expected_views(
    events: Sequence[oracle.RawRecord],
    catalog_for: Mapping[str, dict[int, str]] | dict[int, str],
    settings: Settings,
    batches: Sequence[oracle.MicroBatch] = (),
    cutoff: Mapping[int, int] | None = None,
) -> dict[str, list[dict]]:
    """Oracle views a reader must be served (:func:`oracle.served_views`)."""
    return oracle.served_views(events, catalog_for, settings.views, batches, cutoff)


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
