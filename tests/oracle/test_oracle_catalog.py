from __future__ import annotations

import json

import pytest

from oracle import RawRecord, catalog_state, category_of

pytestmark = pytest.mark.unit


def row(offset: int, product_id: int, category: str | None, partition: int = 0) -> RawRecord:
    value = None
    if category is not None:
        value = json.dumps(
            {
                "product_id": product_id,
                "name": f"Product {product_id}",
                "category": category,
                "price": 1.0,
                "updated_at": "2026-11-01T09:00:00.000Z",
            }
        ).encode()
    return RawRecord(partition, offset, str(product_id).encode(), value)


def test_latest_value_per_key_wins() -> None:
    records = [row(0, 1, "books"), row(1, 2, "toys"), row(2, 1, "music")]
    assert catalog_state(records) == {1: "music", 2: "toys"}


def test_order_is_by_offset_not_input_order() -> None:
    records = [row(5, 1, "music"), row(2, 1, "books")]
    assert catalog_state(records) == {1: "music"}


def test_tombstone_deletes_and_later_insert_restores() -> None:
    assert catalog_state([row(0, 1, "books"), row(1, 1, None)]) == {}
    assert catalog_state([row(0, 1, "books"), row(1, 1, None), row(2, 1, "toys")]) == {1: "toys"}


def test_tombstone_for_unknown_product_is_harmless() -> None:
    assert catalog_state([row(0, 9, None), row(1, 1, "books")]) == {1: "books"}


def test_unusable_records_are_skipped() -> None:
    records = [
        row(0, 1, "books"),
        RawRecord(0, 1, b"1", b"garbage"),
        RawRecord(0, 2, b"abc", b'{"category": "toys"}'),
        RawRecord(0, 3, None, b'{"category": "toys"}'),
    ]
    assert catalog_state(records) == {1: "books"}


def test_category_of_unknown() -> None:
    assert category_of({1: "books"}, 1) == "books"
    assert category_of({1: "books"}, 2) == "unknown"


def test_history_answers_the_version_valid_at_each_time():
    from datetime import datetime, timedelta

    from oracle import catalog_history
    from tests.support.catalog_history import T0, history_records

    def ms(moment: datetime) -> int:
        return (moment - datetime(1970, 1, 1)) // timedelta(milliseconds=1)

    history = catalog_history(history_records(deleted_at=T0 + timedelta(minutes=3)))
    minute = timedelta(minutes=1)
    assert history.category_at(1, ms(T0)) == "books"
    assert history.category_at(1, ms(T0 + 5 * minute) - 1) == "books"
    assert history.category_at(1, ms(T0 + 5 * minute)) == "toys"
    assert history.category_at(2, ms(T0 + 2 * minute)) == "garden"
    assert history.category_at(2, ms(T0 + 3 * minute)) == "unknown"  # the delete's append time
    assert history.category_at(3, ms(T0)) == "unknown"  # not inserted yet
    assert history.category_at(3, ms(T0 + 10 * minute)) == "music"
    assert history.category_at(99, ms(T0)) == "unknown"
