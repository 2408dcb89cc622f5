"""The floors the speed layer is held to, on the real broker: what each commit carries."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from pyspark.sql import functions as F

from compare.floor import start_floor
from compare.floor_context import GATHER_EVERY, HeldContext
from config.settings import Settings, ViewSettings, with_sections
from event_log.decode import EVENT_SCHEMA
from lake.kept import kept
from oracle import consume_all, decode, dedup
from oracle import views as oracle_views
from tests.support.delta import commits, files_added_per_part
from tests.support.kafka import produce_spec
from tests.support.workload import assert_view_matches
from views import conversions
from views.registry import ViewRegistry, default_registry
from workload.generator import WorkloadSpec

pytestmark = pytest.mark.integration

#: the joining view alone: what its context does shows in it, not in the seven others
CONVERSIONS = ViewRegistry([conversions.VIEW])


def test_the_views_floor_commits_the_events_and_every_view_once(spark, topic_settings: Settings):
    produce_spec(topic_settings, WorkloadSpec(events=400, seed=5, users=10, products=5))
    valid, _ = decode(consume_all(topic_settings, topic_settings.kafka.events_topic))
    registry = default_registry()

    query, durations = start_floor(spark, topic_settings, views=registry)
    try:
        query.processAllAvailable()
    finally:
        query.stop()

    table = f"{topic_settings.storage.uri()}/floor_events"
    parts = files_added_per_part(spark, table)
    assert set(parts) == {"events", *(v.name for v in registry)}
    assert len(durations) == commits(spark, table)
    assert all(count == len(durations) for count in parts.values())  # one file per commit
    events = spark.read.format("delta").load(table).where(F.col("part") == "events")
    assert events.count() == len(valid)  # no de-duplication: every valid record


def test_the_views_floor_drops_re_sends_as_the_contract_requires(spark, topic_settings: Settings):
    produce_spec(
        topic_settings,
        WorkloadSpec(events=400, seed=6, users=10, products=5, duplicate_fraction=0.1),
    )
    valid, _ = decode(consume_all(topic_settings, topic_settings.kafka.events_topic))
    distinct = dedup(valid)
    assert len(distinct) < len(valid)  # the log holds re-sends

    query, _ = start_floor(spark, topic_settings, views=default_registry(), deduplicate=True)
    try:
        query.processAllAvailable()
    finally:
        query.stop()

    table = f"{topic_settings.storage.uri()}/floor_events"
    events = spark.read.format("delta").load(table).where(F.col("part") == "events")
    assert events.count() == len(distinct)


def test_the_replay_floor_de_duplicates_each_micro_batch_once_and_keeps_no_events(
    spark, topic_settings: Settings
):
    """Every view reads the micro-batch: its de-duplication still runs once, not once a view."""
    produce_spec(
        topic_settings,
        WorkloadSpec(events=400, seed=7, users=10, products=5, duplicate_fraction=0.1),
    )
    valid, _ = decode(consume_all(topic_settings, topic_settings.kafka.events_topic))
    distinct = dedup(valid)
    registry = default_registry()

    query, _ = start_floor(
        spark, topic_settings, views=registry, deduplicate=True, keep_events=False
    )
    try:
        query.processAllAvailable()
    finally:
        query.stop()

    table = f"{topic_settings.storage.uri()}/floor_events"
    assert set(files_added_per_part(spark, table)) == {v.name for v in registry}
    # the state's writes over every run of its plan: one per distinct id, or ten times as
    # many when each view computed the micro-batch again
    updated = sum(p["stateOperators"][0]["numRowsUpdated"] for p in query.recentProgress)
    assert updated == len(distinct)


def _floor_conversions(spark, settings: Settings, *, join_context: bool) -> list:
    """The floor's ``conversions`` over a log read in the settings' micro-batches, served.

    The floor computes that view alone, as it computes each of the eight (one commit per
    micro-batch, the join's context held between them).
    """
    query, durations = start_floor(
        spark, settings, views=CONVERSIONS, deduplicate=True, join_context=join_context
    )
    try:
        query.processAllAvailable()
    finally:
        query.stop()
    assert len(durations) > 5  # the purchases and views are in micro-batches apart
    table = spark.read.format("delta").load(f"{settings.storage.uri()}/floor_events")
    state = table.where(F.col("part") == conversions.VIEW.name).select("conversions.*")
    return conversions.VIEW.serve(state)


def test_the_views_floor_meets_a_joins_partners_in_earlier_micro_batches(
    spark, make_topic_settings, tmp_path
):
    """conversions computed right: a purchase meets its page view micro-batches before.

    Every late event within the allowed lateness (10 minutes): the context reaches back
    as far as a lane's (its look-back behind the lateness), so an event later than that
    may miss an older partner, where a lane leaves such an event out as late.
    """
    settings = with_sections(make_topic_settings(), stream={"max_offsets_per_trigger": 80})
    spec = WorkloadSpec(events=600, seed=8, users=6, products=4, max_lateness=timedelta(minutes=9))
    produce_spec(settings, spec)
    valid, _ = decode(consume_all(settings, settings.kafka.events_topic))
    expected = oracle_views.conversions(dedup(valid), settings.views)

    served = _floor_conversions(spark, settings, join_context=True)
    alone = _floor_conversions(
        spark, with_sections(settings, storage={"root": str(tmp_path)}), join_context=False
    )

    assert_view_matches(served, expected, conversions.VIEW.name)
    converted = sum(r["converted"] for r in expected)
    assert alone.agg(F.sum("converted")).first()[0] < converted, "alone, it misses partners"


def test_the_views_floor_holds_no_more_of_a_joins_context_than_a_lanes_rule_keeps(spark):
    """Gathered, the held events are the view's ``context_kept`` of them, as a lane keeps.

    Six page views of one user and product in each micro-batch, all in one step of the
    look-back: a lane keeps two of them (the first and the last). A purchase before the
    watermark (the clock less the allowed lateness) meets no page view still to come.
    """
    start = datetime(2026, 12, 1, 10, 0)
    held = HeldContext(CONVERSIONS, ViewSettings())

    def batch(i: int) -> list[tuple]:
        views = [("page_view", start + timedelta(minutes=i, seconds=s)) for s in range(6)]
        purchase = [("purchase", start + timedelta(minutes=i, seconds=30))] if i == 0 else []
        return [
            (f"b{i}-{n}", kind, 1, 1, 1, None, at, None, 0, i * 10 + n, None)
            for n, (kind, at) in enumerate(views + purchase)
        ]

    first = kept(spark.createDataFrame(batch(0), EVENT_SCHEMA))  # as the floor holds a batch
    later = [
        kept(spark.createDataFrame(batch(i), EVENT_SCHEMA)) for i in range(21, 20 + GATHER_EVERY)
    ]
    for frame in [first, *later[:-1]]:
        assert held.add(frame)
    assert held.earlier(conversions.VIEW).count() == 6 * (GATHER_EVERY - 1) + 1  # not gathered yet

    # the batch that fills GATHER_EVERY: all are gathered, the clock past the purchase by
    # more than the allowed lateness (10 minutes)
    held.add(later[-1])

    rows = held.earlier(conversions.VIEW).orderBy("event_time").collect()
    assert [(r.event_type, r.event_id) for r in rows] == [
        ("page_view", "b0-0"),
        ("page_view", f"b{19 + GATHER_EVERY}-5"),
    ]
    held.release()
