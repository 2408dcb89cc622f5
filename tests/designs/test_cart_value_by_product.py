"""The table-table join on a real broker: cart totals x the catalog, kept current when either
side changes (a new price, a catalog delete, a cart emptied), in Lambda and in Kappa."""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import Decimal

import orjson
import pytest

import oracle
from batch_layer.job import run_batch
from config.settings import Settings, with_sections
from designs.kappa import reprocess as kappa
from designs.lambda_arch import run_speed
from event_log.schema import Product, event_fields, format_time
from oracle import consume_all
from tests.conftest import fresh_topics
from tests.support.serving import read_served
from tests.support.workload import assert_view_matches
from views.cart_value_by_product import VIEW
from views.registry import ViewRegistry
from workload.generator import Record
from workload.producer import produce

pytestmark = pytest.mark.integration
T0 = datetime(2026, 11, 1, 10, 0)
REGISTRY = ViewRegistry([VIEW])
_ids = iter(range(1_000))


def _upsert(pid: int, category: str, price: str) -> Record:
    value = Product(pid, f"P{pid}", category, Decimal(price), T0).to_json()
    return Record("catalog", str(pid).encode(), value, "catalog_upsert")


def _cart(kind: str, user: int, pid: int, quantity: int) -> Record:
    n = next(_ids)
    at = format_time(T0 + timedelta(seconds=n))
    fields = event_fields(f"c{n}", kind, user, pid, quantity, None, at, at)
    return Record("events", str(user).encode(), orjson.dumps(fields))


BEFORE = [
    _upsert(1, "books", "10.00"),
    _upsert(2, "garden", "5.00"),
    _upsert(3, "toys", "2.00"),
    _cart("add_to_cart", 1, 1, 2),
    _cart("add_to_cart", 2, 2, 1),
    _cart("add_to_cart", 3, 3, 4),
]
AFTER = [
    _upsert(1, "books", "12.00"),  # a new price re-values product 1
    Record("catalog", b"2", None, "catalog_delete"),  # product 2 leaves the join
    _upsert(4, "music", "1.50"),
    _cart("add_to_cart", 1, 1, 1),
    _cart("remove_from_cart", 3, 3, 4),  # product 3's carts are empty: its row goes
    _cart("add_to_cart", 5, 4, 2),
]


def _row(pid: int, category: str, price: str, in_carts: int, value: str) -> dict:
    return {
        "product_id": pid,
        "category": category,
        "price": Decimal(price),
        "in_carts": in_carts,
        "cart_value": Decimal(value),
    }


AFTER_BATCH = [
    _row(1, "books", "10.00", 2, "20.00"),
    _row(2, "garden", "5.00", 1, "5.00"),
    _row(3, "toys", "2.00", 4, "8.00"),
]
EXPECTED = [_row(1, "books", "12.00", 3, "36.00"), _row(4, "music", "1.50", 2, "3.00")]


def _oracle(settings: Settings) -> list[dict]:
    events = consume_all(settings, settings.kafka.events_topic)
    catalog = oracle.catalog_state(consume_all(settings, settings.kafka.catalog_topic))
    return oracle.served_views(events, catalog, settings.views)[VIEW.name]


def test_either_side_changing_updates_the_join_in_both_designs(spark, kafka_settings):
    settings = fresh_topics(kafka_settings)
    assert produce(settings, BEFORE).failed == 0
    run_batch(spark, settings, REGISTRY)
    assert_view_matches(read_served(spark, settings, VIEW.name), AFTER_BATCH, VIEW.name)
    assert produce(settings, AFTER).failed == 0
    run_speed(spark, settings, REGISTRY, until_caught_up=True)
    served = read_served(spark, settings, VIEW.name)
    assert_view_matches(served, EXPECTED, VIEW.name)
    assert_view_matches(served, _oracle(settings), VIEW.name)

    replay = with_sections(settings, storage={"root": f"{settings.storage.root}/kappa"})
    replay = replay.model_copy(update={"mode": "kappa"})
    assert kappa.reprocess(spark, replay, REGISTRY).version == 1
    replayed = read_served(spark, replay, VIEW.name)
    assert_view_matches(replayed, EXPECTED, VIEW.name)
    assert_view_matches(replayed, _oracle(replay), VIEW.name)
