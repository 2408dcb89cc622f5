"""Serving views as Spark SQL temp views: ``spark.sql`` gives the oracle's rows."""

from __future__ import annotations

from collections import Counter

import pytest

from designs.platform import build
from oracle import consume_all
from serving_layer.sql import register_views
from tests.support.serving import passthrough_view
from tests.support.workload import assert_view_matches, oracle_views
from views import default_registry
from views.registry import BUILT_IN, ViewRegistry

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def expected(served) -> dict[str, list[dict]]:
    """The oracle's views over the whole log (one batch run serves all of it)."""
    events = consume_all(served, served.kafka.events_topic)
    catalog = consume_all(served, served.kafka.catalog_topic)
    return oracle_views(events, catalog, served.views)


def _register(spark, settings, registry=None) -> list[str]:
    platform = build(settings, registry)
    return register_views(spark, platform.serving_source(spark), platform.registry)


def test_every_view_is_registered_by_name_with_the_oracles_rows(spark, served, expected):
    names = _register(spark, served)
    assert names == default_registry().names()
    for name in names:
        assert_view_matches(spark.sql(f"SELECT * FROM {name}"), expected[name], name)


def test_analysts_filter_and_aggregate_in_sql(spark, served, expected):
    _register(spark, served)
    books = spark.sql("SELECT * FROM revenue_by_category WHERE category = 'books'")
    want = [r for r in expected["revenue_by_category"] if r["category"] == "books"]
    assert want, "the workload sold books"
    assert_view_matches(books, want, "revenue_by_category")
    totals = spark.sql(
        "SELECT category, sum(orders) AS orders FROM revenue_by_category GROUP BY category"
    )
    orders: Counter[str] = Counter()
    for row in expected["revenue_by_category"]:
        orders[row["category"]] += row["orders"]
    assert {r.category: r.orders for r in totals.collect()} == dict(orders)


def test_a_view_the_source_did_not_compute_is_not_registered(spark, served):
    ghost = passthrough_view("ghost_view")
    spark.range(3).createOrReplaceTempView("ghost_view")
    names = _register(spark, served, ViewRegistry([*BUILT_IN, ghost]))
    assert "ghost_view" not in names and len(names) == len(BUILT_IN)
    assert not spark.catalog.tableExists("ghost_view")
