"""The batch layer over a real broker: views equal the oracle; runs are idempotent and atomic."""

from __future__ import annotations

import pytest
from pyspark.testing import assertDataFrameEqual

from batch_layer import runs
from batch_layer.job import BatchResult, read_batch_state, run_batch
from config.settings import Settings
from designs.platform import build
from lake.tables import Tables
from oracle import consume_all
from tests.support.kafka import produce_spec
from tests.support.workload import assert_view_matches, oracle_views
from views import default_registry
from workload.generator import WorkloadSpec

pytestmark = pytest.mark.integration
SPEC = WorkloadSpec(events=3_000, users=50, products=30, seed=11)


@pytest.fixture(scope="module")
def first_run(spark, kafka_settings) -> tuple[Settings, BatchResult]:
    from tests.conftest import fresh_topics

    settings = fresh_topics(kafka_settings)
    produce_spec(settings, SPEC)
    return settings, run_batch(spark, settings, build(settings).registry)


def test_batch_views_equal_the_oracle(spark, first_run):
    settings, result = first_run
    assert not result.skipped and result.run.status == "published"
    events = consume_all(settings, settings.kafka.events_topic)
    catalog = consume_all(settings, settings.kafka.catalog_topic)
    assert sum(result.run.cutoff.values()) == len(events)
    expected = oracle_views(events, catalog, settings.views)
    for view in default_registry():
        presented = view.present(read_batch_state(spark, settings, view))
        assert_view_matches(presented, expected[view.name], view.name)
    quarantine = spark.read.format("delta").load(Tables.of(settings).quarantine)
    assert quarantine.count() == result.run.quarantined_rows > 0
    assert quarantine.where("reason is null or value is null").count() == 0
    assert all(report.success for report in result.checks)
    assert {r.table for r in result.checks} == {"bronze", *default_registry().names()}


def test_rerun_changes_nothing_and_forced_rerun_gives_identical_tables(spark, first_run):
    settings, first = first_run
    again = run_batch(spark, settings, build(settings).registry)
    assert again.skipped and again.run.run_id == first.run.run_id
    forced = run_batch(spark, settings, build(settings).registry, force=True)
    assert forced.run.run_id != first.run.run_id and forced.run.cutoff == first.run.cutoff
    tables = Tables.of(settings)
    for view in default_registry():
        before = tables.batch_view(first.run.run_id, view.name).read(spark)
        after = tables.batch_view(forced.run.run_id, view.name).read(spark)
        assertDataFrameEqual(after.drop("_users_sketch"), before.drop("_users_sketch"))
    bronze = spark.read.format("delta").load(tables.bronze)
    assert bronze.count() == bronze.select("event_id").distinct().count() == forced.run.bronze_rows


def test_a_run_that_dies_midway_leaves_the_previous_views_published(spark, first_run):
    settings, _ = first_run
    tables = Tables.of(settings)
    published = runs.latest_published(spark, tables)
    produce_spec(settings, WorkloadSpec(events=500, users=50, products=30, seed=12))

    def crash(view: str) -> None:
        if view == "events_by_type":
            raise KeyboardInterrupt("killed midway")

    with pytest.raises(KeyboardInterrupt):
        run_batch(spark, settings, build(settings).registry, on_view=crash)
    assert runs.latest_published(spark, tables).run_id == published.run_id
    view = default_registry().get("revenue_by_category")
    assert read_batch_state(spark, settings, view).count() > 0
    recovered = run_batch(spark, settings, build(settings).registry)
    assert recovered.run.status == "published"
    assert sum(recovered.run.cutoff.values()) > sum(published.cutoff.values())
