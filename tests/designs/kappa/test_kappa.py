"""Kappa on a real broker: replay equals the oracle; reprocess flips only after catch-up."""

from __future__ import annotations

from datetime import timedelta

import pytest

import oracle
from config.settings import with_sections
from designs.kappa import reprocess as kappa
from designs.kappa.versions import lane_name, serving_version
from designs.platform import build
from event_log.topics import delete_records, end_offsets
from lake.tables import Tables
from oracle import consume_all
from speed_layer import lane_log
from speed_layer.lane import find_lane
from tests.conftest import fresh_topics
from tests.support.expected import expected_views, lane_batches, late_counts
from tests.support.kafka import produce_spec
from tests.support.serving import read_served, source_of
from tests.support.workload import assert_view_matches
from views import default_registry
from workload.generator import WorkloadSpec

pytestmark = pytest.mark.integration
SPEC = WorkloadSpec(events=2_500, users=60, products=30, seed=21)


@pytest.fixture(scope="module")
def kappa_settings(kafka_settings):
    lateness = {"revenue_by_category": timedelta(hours=1)}  # covers the 45-minute maximum
    settings = with_sections(
        fresh_topics(kafka_settings),
        stream={
            "max_offsets_per_trigger": 1_000,
            "replay_max_offsets_per_trigger": 1_000,
            "compact_every": 2,
        },
        views={"allowed_lateness": lateness},
    ).model_copy(update={"mode": "kappa"})
    produce_spec(settings, SPEC)
    return settings


def _assert_equals_oracle(spark, settings, version: int) -> dict[str, int]:
    """Serving equals the oracle, less the events the contract makes late; their counts."""
    events = consume_all(settings, settings.kafka.events_topic)
    catalog = oracle.catalog_state(consume_all(settings, settings.kafka.catalog_topic))
    batches = lane_batches(spark, settings, lane_name(version))
    expected = expected_views(events, catalog, settings, batches)
    for view in default_registry():
        assert_view_matches(read_served(spark, settings, view.name), expected[view.name], view.name)
    return late_counts(events, settings, batches)


def test_first_replay_builds_v1_equal_to_the_oracle(spark, kappa_settings):
    settings = kappa_settings
    result = kappa.reprocess(spark, settings, build(settings).registry)
    assert result.version == 1 and result.previous is None
    assert source_of(spark, settings).description == "kappa v1"
    late = _assert_equals_oracle(spark, settings, 1)
    assert not late.get("revenue_by_category"), "lateness covers the workload: exact"
    assert late.get("user_sessions"), "10 minutes do not cover 45: some events are excluded"
    labelled = read_served(spark, settings, "revenue_by_category", with_status=True).collect()
    last_window = max(r.window_end for r in labelled)
    assert {r.status for r in labelled if r.window_end < last_window - timedelta(hours=2)} == {
        "final"
    }
    assert {r.status for r in labelled if r.window_end == last_window} == {"provisional"}


def test_a_replay_is_complete_only_up_to_the_offsets_it_committed(spark, kappa_settings):
    settings = kappa_settings
    v1 = find_lane(spark, Tables.of(settings), lane_name(1))
    end = end_offsets(settings, settings.kafka.events_topic)
    kappa.check_replay_complete(spark, settings, v1, end)
    beyond = {p: o + 1 for p, o in end.items()}
    with pytest.raises(kappa.KappaError, match="stopped before the log end"):
        kappa.check_replay_complete(spark, settings, v1, beyond)


def test_reprocess_with_a_new_window_flips_only_after_catch_up_and_rolls_back(
    spark, kappa_settings
):
    settings = kappa_settings
    before = read_served(spark, settings, "revenue_by_category").collect()
    changed = settings.model_copy(
        update={
            "views": settings.views.model_copy(update={"tumbling_window": timedelta(minutes=5)})
        }
    )
    seen_during_replay = []

    def query_old(version: int) -> None:
        seen_during_replay.append(read_served(spark, changed, "revenue_by_category").collect())

    result = kappa.reprocess(spark, changed, build(changed).registry, before_switch=query_old)
    assert result.version == 2 and result.previous == 1
    assert seen_during_replay == [before]
    assert (
        result.diff["revenue_by_category"]["rows_new"]
        < result.diff["revenue_by_category"]["rows_old"]
    )
    windows = read_served(spark, changed, "revenue_by_category").collect()
    assert all((r.window_end - r.window_start) == timedelta(minutes=5) for r in windows)
    _assert_equals_oracle(spark, changed, 2)

    assert kappa.rollback(spark, settings, default_registry()) == 1
    assert read_served(spark, settings, "revenue_by_category").collect() == before
    with pytest.raises(kappa.KappaError, match="serves readers"):
        kappa.drop(spark, settings, 1)
    tables = Tables.of(settings)
    v2 = find_lane(spark, tables, lane_name(2))
    assert lane_log.read(spark, v2, lane_log.QUARANTINE).count() > 0
    kappa.drop(spark, settings, 2)
    assert serving_version(spark, tables) == 1
    assert find_lane(spark, tables, lane_name(2)) is None, "v2's lane (and its quarantine) went"
    v1 = find_lane(spark, tables, lane_name(1))
    assert lane_log.read(spark, v1, lane_log.QUARANTINE).count() > 0


def test_reprocess_refuses_a_truncated_log(kafka_settings):
    settings = fresh_topics(kafka_settings)
    produce_spec(settings, WorkloadSpec(events=200, users=10, products=5, seed=3))
    delete_records(settings, settings.kafka.events_topic, {0: 5})
    with pytest.raises(kappa.TruncatedLogError, match="partition 0 starts at offset 5"):
        kappa.check_log_complete(settings)
