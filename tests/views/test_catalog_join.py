"""revenue_by_category under both catalog join rules, on a catalog with a known history."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest

import oracle
from config.settings import ViewSettings
from event_log.catalog import catalog_table, catalog_versions
from tests.support.catalog_history import T0, changes_frame, history_records
from tests.support.workload import assert_view_matches
from tests.views.conftest import make_events
from views.base import ViewContext
from views.revenue_by_category import VIEW

pytestmark = pytest.mark.integration
M = timedelta(minutes=1)
PURCHASES = [
    ("purchase", 1, 1, 1, 10.00, T0 + M),  # product 1 was books then
    ("purchase", 2, 1, 1, 7.00, T0 + 6 * M),  # toys from T0 + 5 min
    ("purchase", 3, 2, 1, 5.00, T0 + M),  # garden (its delete came much later)
    ("purchase", 4, 3, 1, 3.00, T0 + 2 * M),  # product 3 did not exist yet
    ("purchase", 5, 3, 1, 2.00, T0 + 10 * M),  # exactly when it appeared: music
    ("page_view", 5, 1, None, None, T0 + M),
]


def _row(minute: int, category: str, orders: int, revenue: str) -> dict:
    start = T0 + minute * M
    return {
        "window_start": start,
        "window_end": start + M,
        "category": category,
        "orders": orders,
        "revenue": Decimal(revenue),
    }


AS_OF = [
    _row(1, "books", 1, "10.00"),
    _row(1, "garden", 1, "5.00"),
    _row(2, "unknown", 1, "3.00"),
    _row(6, "toys", 1, "7.00"),
    _row(10, "music", 1, "2.00"),
]
#: today's rule: the catalog as it stands now (product 1 toys, product 2 deleted)
CURRENT = [
    _row(1, "toys", 1, "10.00"),
    _row(1, "unknown", 1, "5.00"),
    _row(2, "music", 1, "3.00"),
    _row(6, "toys", 1, "7.00"),
    _row(10, "music", 1, "2.00"),
]


@pytest.fixture(scope="module")
def context(spark):
    changes = changes_frame(spark, history_records())
    return catalog_table(changes).cache(), catalog_versions(changes).cache()


@pytest.mark.parametrize(("rule", "expected"), [("as_of_event_time", AS_OF), ("current", CURRENT)])
def test_each_rule_gives_its_documented_rows(spark, context, rule, expected):
    catalog, versions = context
    settings = ViewSettings(catalog_join={"revenue_by_category": rule})
    actual = VIEW.evaluate(make_events(spark, PURCHASES), ViewContext(settings, catalog, versions))
    assert_view_matches(actual, expected, "revenue_by_category")


@pytest.mark.parametrize("rule", ["as_of_event_time", "current"])
def test_each_rule_equals_the_oracle(spark, context, rule):
    catalog, versions = context
    settings = ViewSettings(catalog_join={"revenue_by_category": rule})
    events = make_events(spark, PURCHASES)
    records = history_records()
    unique = [
        oracle.Event(f"e{i}", kind, user, pid, qty, Decimal(str(p)) if p else None, t, 0, i)
        for i, (kind, user, pid, qty, p, t) in enumerate(PURCHASES)
    ]
    expected = oracle.revenue_by_category(
        unique, oracle.catalog_state(records), settings, oracle.catalog_history(records)
    )
    actual = VIEW.evaluate(events, ViewContext(settings, catalog, versions))
    assert_view_matches(actual, expected, "revenue_by_category")


def test_a_delete_takes_effect_from_its_append_time(spark):
    """A tombstone has no time of its own: purchases after its append time are unknown."""
    changes = changes_frame(spark, history_records(deleted_at=T0 + 3 * M))
    settings = ViewSettings(catalog_join={"revenue_by_category": "as_of_event_time"})
    ctx = ViewContext(settings, catalog_table(changes), catalog_versions(changes))
    events = make_events(
        spark, [("purchase", 1, 2, 1, 5.00, T0 + M), ("purchase", 1, 2, 2, 4.00, T0 + 3 * M)]
    )
    expected = [_row(1, "garden", 1, "5.00"), _row(3, "unknown", 1, "8.00")]
    assert_view_matches(VIEW.evaluate(events, ctx), expected, "revenue_by_category")


def test_as_of_needs_the_versions(spark, context):
    catalog, _ = context
    settings = ViewSettings(catalog_join={"revenue_by_category": "as_of_event_time"})
    with pytest.raises(ValueError, match="versions"):
        VIEW.compute(make_events(spark, PURCHASES), ViewContext(settings, catalog))
