"""Serving views as Spark SQL temp views: ``spark.sql`` gives the rows ``read_view`` gives."""

from __future__ import annotations

import pytest
from pyspark.sql import functions as F
from pyspark.testing import assertDataFrameEqual

from serving_layer.read import read_view
from serving_layer.sql import register_views
from views import default_registry
from views.base import View
from views.registry import BUILT_IN, ViewRegistry

pytestmark = pytest.mark.integration


def test_every_view_is_registered_by_name_with_the_presented_rows(spark, served):
    names = register_views(spark, served)
    assert names == default_registry().names()
    for name in names:
        assert_same = read_view(spark, served, name)
        assertDataFrameEqual(spark.sql(f"SELECT * FROM {name}"), assert_same)
        assert spark.table(name).columns == assert_same.columns


def test_analysts_filter_and_aggregate_in_sql(spark, served):
    register_views(spark, served)
    books = spark.sql("SELECT * FROM revenue_by_category WHERE category = 'books'")
    expected = read_view(spark, served, "revenue_by_category").where(F.col("category") == "books")
    assertDataFrameEqual(books, expected)
    assert books.count() > 0
    totals = spark.sql(
        "SELECT category, sum(orders) AS orders FROM revenue_by_category GROUP BY category"
    )
    assertDataFrameEqual(
        totals,
        read_view(spark, served, "revenue_by_category")
        .groupBy("category")
        .agg(F.sum("orders").alias("orders")),
    )


def test_a_view_the_source_did_not_compute_is_not_registered(spark, served):
    ghost = View(
        name="ghost_view",
        key=("id",),
        compute=lambda events, ctx: events,
        merge=lambda state: state,
        merge_rule="test only",
    )
    spark.range(3).createOrReplaceTempView("ghost_view")
    names = register_views(spark, served, ViewRegistry([*BUILT_IN, ghost]))
    assert "ghost_view" not in names and len(names) == len(BUILT_IN)
    assert not spark.catalog.tableExists("ghost_view")
