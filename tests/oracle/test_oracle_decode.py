from __future__ import annotations

import json
from datetime import datetime
from decimal import Decimal
from typing import Any

import pytest

from oracle import Event, RawRecord, decode, dedup

pytestmark = pytest.mark.unit


def doc(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "event_id": "s1-000001",
        "event_type": "purchase",
        "user_id": 7,
        "product_id": 12,
        "quantity": 2,
        "price": 19.99,
        "event_time": "2026-11-01T10:00:01.250Z",
        "sent_time": "2026-11-01T10:00:03.000Z",
        "schema_version": 1,
    }
    base.update(overrides)
    return {k: v for k, v in base.items() if v is not DROP}


DROP = object()


def raw(value: Any, partition: int = 0, offset: int = 0) -> RawRecord:
    if isinstance(value, dict):
        value = json.dumps(value).encode()
    elif isinstance(value, str):
        value = value.encode()
    return RawRecord(partition, offset, b"7", value)


def reason(value: Any) -> str | None:
    events, bad = decode([raw(value)])
    assert len(events) + len(bad) == 1
    return bad[0].reason if bad else None


def test_valid_purchase_decodes_to_event() -> None:
    events, bad = decode([raw(doc(), partition=2, offset=5)])
    assert bad == []
    assert events == [
        Event(
            event_id="s1-000001",
            event_type="purchase",
            user_id=7,
            product_id=12,
            quantity=2,
            price=Decimal("19.99"),
            event_time=datetime(2026, 11, 1, 10, 0, 1, 250_000),
            partition=2,
            offset=5,
        )
    ]
    assert str(events[0].price) == "19.99"


@pytest.mark.parametrize(
    "value",
    [
        None,
        b"",
        b"\xff\xfe{}",
        "not json",
        "[1, 2]",
        "42",
        '"text"',
        "null",
        '{"price": NaN, "schema_version": 1}',
    ],
)
def test_invalid_json(value: Any) -> None:
    assert reason(value) == "invalid_json"


@pytest.mark.parametrize("version", [DROP, None, 2, "1", True, 1.0, 0])
def test_unsupported_schema_version(version: Any) -> None:
    assert reason(doc(schema_version=version)) == "unsupported_schema_version"


def test_schema_version_checked_before_missing_fields() -> None:
    assert reason({"schema_version": 2}) == "unsupported_schema_version"


@pytest.mark.parametrize("name", ["event_id", "event_type", "user_id", "product_id", "event_time"])
@pytest.mark.parametrize("how", ["absent", "null"])
def test_missing_field(name: str, how: str) -> None:
    value = doc(**{name: DROP if how == "absent" else None})
    assert reason(value) == f"missing_field:{name}"


def test_empty_event_id_is_missing() -> None:
    assert reason(doc(event_id="")) == "missing_field:event_id"


def test_missing_field_reports_the_first_in_contract_order() -> None:
    value = doc(event_time=DROP, product_id=None, event_type=DROP)
    assert reason(value) == "missing_field:event_type"
    assert reason(doc(event_time=DROP, product_id=None)) == "missing_field:product_id"


def test_missing_field_before_unknown_type() -> None:
    assert reason(doc(event_type="click", user_id=DROP)) == "missing_field:user_id"


@pytest.mark.parametrize("event_type", ["click", "Purchase", 3, "", ["purchase"]])
def test_unknown_event_type(event_type: Any) -> None:
    assert reason(doc(event_type=event_type)) == "unknown_event_type"


def test_unknown_type_before_invalid_user() -> None:
    assert reason(doc(event_type="click", user_id="x")) == "unknown_event_type"


@pytest.mark.parametrize("bad", ["7", 7.5, 7.0, True, False, [7], {"id": 7}, 2**63])
def test_invalid_user_id(bad: Any) -> None:
    assert reason(doc(user_id=bad)) == "invalid_user_id"


@pytest.mark.parametrize("bad", ["12", 1.5, True])
def test_invalid_product_id(bad: Any) -> None:
    assert reason(doc(product_id=bad)) == "invalid_product_id"


def test_user_id_checked_before_product_id() -> None:
    assert reason(doc(user_id="a", product_id="b")) == "invalid_user_id"


def test_negative_and_zero_ids_are_integers() -> None:
    assert reason(doc(user_id=0, product_id=-3)) is None


@pytest.mark.parametrize(
    "bad",
    [
        "2026-11-01T10:00:01Z",
        "2026-11-01T10:00:01.25Z",
        "2026-11-01T10:00:01.2500Z",
        "2026-11-01 10:00:01.250Z",
        "2026-11-01T10:00:01.250",
        "2026-11-01T10:00:01.250+00:00",
        "2026-02-30T10:00:01.250Z",
        "2026-11-01T24:00:00.000Z",
        " 2026-11-01T10:00:01.250Z",
        "2026-11-01T10:00:01.250Z\n",
        1_700_000_000_000,
    ],
)
def test_invalid_event_time(bad: Any) -> None:
    assert reason(doc(event_time=bad)) == "invalid_event_time"


def test_event_time_before_quantity_and_price() -> None:
    assert reason(doc(event_time="yesterday", quantity=0, price=-1)) == "invalid_event_time"


@pytest.mark.parametrize("event_type", ["add_to_cart", "remove_from_cart", "purchase"])
@pytest.mark.parametrize("bad", [DROP, None, 0, -1, 1.5, 2.0, "2", True])
def test_invalid_quantity(event_type: str, bad: Any) -> None:
    assert reason(doc(event_type=event_type, quantity=bad)) == "invalid_quantity"


@pytest.mark.parametrize(
    ("quantity", "kept"), [(DROP, None), (None, None), (0, 0), (-2, -2), ("x", None), (True, None)]
)
def test_page_view_ignores_quantity(quantity: Any, kept: int | None) -> None:
    events, bad = decode([raw(doc(event_type="page_view", quantity=quantity, price=DROP))])
    assert bad == []
    assert events[0].quantity == kept  # carried along when it is an integer, never validated
    assert events[0].price is None


def test_quantity_before_price() -> None:
    assert reason(doc(quantity=0, price=-1)) == "invalid_quantity"


@pytest.mark.parametrize("bad", [DROP, None, -0.01, -5, "19.99", True, [1]])
def test_invalid_price(bad: Any) -> None:
    assert reason(doc(price=bad)) == "invalid_price"


@pytest.mark.parametrize("event_type", ["add_to_cart", "remove_from_cart", "page_view"])
@pytest.mark.parametrize("price", [DROP, None, -3, "free"])
def test_price_ignored_outside_purchase(event_type: str, price: Any) -> None:
    assert reason(doc(event_type=event_type, price=price)) is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("20", "20.00"),
        ("0", "0.00"),
        ("19.9", "19.90"),
        ("19.99", "19.99"),
        ("1e2", "100.00"),
        ("-0.0", "0.00"),
        ("19.995", "20.00"),
        ("0.004", "0.00"),
    ],
)
def test_price_is_exact_decimal_with_two_places(text: str, expected: str) -> None:
    value = json.dumps(doc(price=0)).replace('"price": 0', f'"price": {text}')
    events, bad = decode([raw(value)])
    assert bad == []
    assert str(events[0].price) == expected


def test_sent_time_is_not_validated() -> None:
    assert reason(doc(sent_time="garbage")) is None
    assert reason(doc(sent_time=DROP)) is None


def test_quarantine_keeps_raw_record() -> None:
    record = RawRecord(3, 17, b"7", b"{oops")
    events, bad = decode([record])
    assert events == []
    assert bad[0].record == record
    assert bad[0].reason == "invalid_json"


def test_decode_keeps_input_order_and_splits() -> None:
    records = [raw(doc(event_id="a"), 0, 0), raw("x", 0, 1), raw(doc(event_id="b"), 0, 2)]
    events, bad = decode(records)
    assert [e.event_id for e in events] == ["a", "b"]
    assert [(q.record.offset, q.reason) for q in bad] == [(1, "invalid_json")]


def test_dedup_keeps_lowest_offset() -> None:
    events, _ = decode(
        [
            raw(doc(event_id="a", sent_time="2026-11-01T10:00:09.000Z"), 1, 9),
            raw(doc(event_id="b"), 1, 4),
            raw(doc(event_id="a"), 1, 3),
            raw(doc(event_id="a"), 1, 12),
        ]
    )
    kept = dedup(events)
    assert [(e.event_id, e.partition, e.offset) for e in kept] == [("a", 1, 3), ("b", 1, 4)]


def test_dedup_orders_by_partition_then_offset() -> None:
    events, _ = decode([raw(doc(event_id="a"), 2, 0), raw(doc(event_id="a"), 1, 50)])
    assert [(e.partition, e.offset) for e in dedup(events)] == [(1, 50)]


def test_dedup_is_by_event_id_only() -> None:
    events, _ = decode([raw(doc(event_id="a"), 0, 0), raw(doc(event_id="b"), 0, 1)])
    assert len(dedup(events)) == 2


@pytest.mark.parametrize(("value", "expected"), [(42, "42"), (True, "true")])
def test_non_string_event_id_kept_as_json_text(value: object, expected: str) -> None:
    events, bad = decode([raw(doc(event_id=value))])
    assert bad == []
    assert events[0].event_id == expected
