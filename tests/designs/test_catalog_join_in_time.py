"""Joins correct in time, on a real broker: a category changes after the purchases.

Lambda's batch run sees the catalog before the change; its speed layer and a later Kappa
replay see it after. Joined as of the event's time, all three give the oracle's answer
for the same events, whatever the catalog did since. Joined with the catalog as it
stands (the default), the documented difference appears: the batch files product 1 under
``books``, the speed layer and the replay under ``toys``, and a deleted product's revenue
becomes ``unknown``.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import Decimal

import pytest

import oracle
from batch_layer.job import run_batch
from config.settings import Settings, with_sections
from designs.kappa import reprocess as kappa
from designs.lambda_arch import run_speed
from oracle import consume_all
from tests.conftest import fresh_topics
from tests.support.bursts import purchase
from tests.support.catalog_history import T0, product
from tests.support.serving import read_served
from tests.support.workload import assert_view_matches
from views.registry import ViewRegistry
from views.revenue_by_category import VIEW
from workload.generator import Record
from workload.producer import produce

pytestmark = pytest.mark.integration
M = timedelta(minutes=1)
BEFORE = [  # (user, product, price, event time): in the batch run
    (1, 1, "10.00", T0 + M / 6),
    (2, 2, "5.00", T0 + M / 3),
]
AFTER = [  # in the speed layer: two before the change's time, one after it
    (3, 1, "7.00", T0 + M + M / 6),
    (4, 2, "3.00", T0 + M + M / 3),
    (5, 1, "2.00", T0 + 40 * M),
]
#: product 1 becomes toys at T0 + 30 min, product 2 is deleted: after the batch ran
CHANGE = [
    Record("catalog", b"1", product(1, "toys", T0 + 30 * M), "catalog_upsert"),
    Record("catalog", b"2", None, "catalog_delete"),
]


def _purchases(rows: list[tuple[int, int, str, datetime]], first: int) -> list[Record]:
    return [
        purchase(f"p{first + i}", user, t, product=pid, price=float(price))
        for i, (user, pid, price, t) in enumerate(rows)
    ]


def _row(start, category: str, revenue: str) -> dict:
    return {
        "window_start": start,
        "window_end": start + M,
        "category": category,
        "orders": 1,
        "revenue": Decimal(revenue),
    }


AS_OF = [
    _row(T0, "books", "10.00"),
    _row(T0, "garden", "5.00"),
    _row(T0 + M, "books", "7.00"),
    _row(T0 + M, "garden", "3.00"),
    _row(T0 + 40 * M, "toys", "2.00"),
]
LAMBDA_CURRENT = [  # the batch joined the old catalog, the speed layer the new one
    _row(T0, "books", "10.00"),
    _row(T0, "garden", "5.00"),
    _row(T0 + M, "toys", "7.00"),
    _row(T0 + M, "unknown", "3.00"),
    _row(T0 + 40 * M, "toys", "2.00"),
]
KAPPA_CURRENT = [  # the replay joined every purchase with today's catalog
    _row(T0, "toys", "10.00"),
    _row(T0, "unknown", "5.00"),
    _row(T0 + M, "toys", "7.00"),
    _row(T0 + M, "unknown", "3.00"),
    _row(T0 + 40 * M, "toys", "2.00"),
]
REGISTRY = ViewRegistry([VIEW])


def _settings(kafka_settings: Settings, rule: str) -> Settings:
    return with_sections(
        fresh_topics(kafka_settings),
        views={
            "catalog_join": {"revenue_by_category": rule},
            "allowed_lateness": {"revenue_by_category": timedelta(hours=2)},
        },
    )


def _oracle(settings: Settings, cutoff=None, batch_catalog=None) -> list[dict]:
    """The oracle's rows: as of event time, or with the catalog each layer saw."""
    events = consume_all(settings, settings.kafka.events_topic)
    records = consume_all(settings, settings.kafka.catalog_topic)
    now = oracle.catalog_state(records)
    joined = now if cutoff is None else {"batch": batch_catalog or now, "speed": now}
    served = oracle.served_views(
        events, joined, settings.views, cutoff=cutoff, history=oracle.catalog_history(records)
    )
    return served["revenue_by_category"]


@pytest.mark.parametrize(
    ("rule", "lambda_rows", "kappa_rows"),
    [("as_of_event_time", AS_OF, AS_OF), ("current", LAMBDA_CURRENT, KAPPA_CURRENT)],
)
def test_lambda_batch_speed_and_kappa_replay(spark, kafka_settings, rule, lambda_rows, kappa_rows):
    settings = _settings(kafka_settings, rule)
    catalog = [
        Record("catalog", b"1", product(1, "books", T0 - 60 * M), "catalog_upsert"),
        Record("catalog", b"2", product(2, "garden", T0 - 60 * M), "catalog_upsert"),
    ]
    assert produce(settings, catalog + _purchases(BEFORE, 0)).failed == 0
    batch = run_batch(spark, settings, REGISTRY)
    batch_catalog = oracle.catalog_state(consume_all(settings, settings.kafka.catalog_topic))
    assert produce(settings, CHANGE + _purchases(AFTER, len(BEFORE))).failed == 0
    run_speed(spark, settings, REGISTRY, until_caught_up=True)

    served = read_served(spark, settings, "revenue_by_category")
    assert_view_matches(served, lambda_rows, "revenue_by_category")
    expected = _oracle(settings, batch.run.cutoff, batch_catalog)
    assert_view_matches(served, expected, "revenue_by_category")

    # the same log replayed by Kappa after everything happened
    replay = with_sections(settings, storage={"root": f"{settings.storage.root}/kappa"})
    replay = replay.model_copy(update={"mode": "kappa"})
    assert kappa.reprocess(spark, replay, REGISTRY).version == 1
    replayed = read_served(spark, replay, "revenue_by_category")
    assert_view_matches(replayed, kappa_rows, "revenue_by_category")
    assert_view_matches(replayed, _oracle(replay), "revenue_by_category")
