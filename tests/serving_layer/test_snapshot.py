"""A served snapshot answers by key, by other columns and whole, rows rendered as asked."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pyspark.sql.types import (
    ArrayType,
    DecimalType,
    DoubleType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from lake.source import StateTable
from serving_layer.snapshot import ViewSnapshot

pytestmark = pytest.mark.unit

SCHEMA = StructType(
    [
        StructField("user_id", StringType()),
        StructField("product_id", StringType()),
        StructField("quantity", LongType()),
        StructField("value", DecimalType(10, 2)),
        StructField("updated_at", TimestampType()),
    ]
)
AT = datetime(2026, 11, 27, 6, 0)
ROWS = [
    ("u1", "p1", 2, Decimal("3.50"), AT),
    ("u1", "p2", 1, Decimal("10.00"), AT),
    ("u2", "p1", 2, Decimal("3.50"), AT),
    ("u3", "p3", 5, Decimal("1.25"), AT),
]


KEY = ("user_id", "product_id")
ORDERS = pytest.mark.parametrize("ordered_on", [KEY, ()], ids=["ordered", "unordered"])
"""Rows in key order are searched and spliced by binary search, others filtered whole."""


def snapshot(
    rows: list[tuple],
    previous: ViewSnapshot | None = None,
    schema: StructType = SCHEMA,
    ordered_on: tuple[str, ...] = (),
) -> ViewSnapshot:
    return ViewSnapshot(
        ordered_on=ordered_on,
        previous=previous,
        name="carts",
        key=("user_id", "product_id"),
        schema=schema,
        rows=rows,
        table=StateTable("/nowhere"),
        version=3,
        refreshed_at=AT,
    )


def test_a_point_query_by_the_whole_key_gives_its_one_row_rendered() -> None:
    got = snapshot(ROWS).select({"user_id": "u2", "product_id": "p1"})
    assert got == [
        {
            "user_id": "u2",
            "product_id": "p1",
            "quantity": 2,
            "value": 3.5,
            "updated_at": "2026-11-27T06:00:00.000Z",
        }
    ]


@ORDERS
def test_filters_on_part_of_the_key_or_other_columns_keep_presentation_order(
    ordered_on: tuple[str, ...],
) -> None:
    carts = snapshot(ROWS, ordered_on=ordered_on)
    assert [r["product_id"] for r in carts.select({"user_id": "u1"})] == ["p1", "p2"]
    assert [r["user_id"] for r in carts.select({"quantity": 2})] == ["u1", "u2"]
    assert [r["user_id"] for r in carts.select({"product_id": "p1", "quantity": 2})] == [
        "u1",
        "u2",
    ]
    assert carts.select({"user_id": "u9"}) == []
    assert [r["user_id"] for r in carts.select({}, limit=3)] == ["u1", "u1", "u2"]


@ORDERS
def test_a_key_held_twice_answers_with_both_rows_first_row_first(
    ordered_on: tuple[str, ...],
) -> None:
    doubled = snapshot(
        [ROWS[0], ("u1", "p1", 7, Decimal("0.10"), AT), *ROWS[1:]], ordered_on=ordered_on
    )
    got = doubled.select({"user_id": "u1", "product_id": "p1"})
    assert [r["quantity"] for r in got] == [2, 7]


def test_a_row_is_rendered_once_and_the_same_for_every_request() -> None:
    carts = snapshot(ROWS)
    first = carts.select({"user_id": "u3"})
    again = carts.select({"quantity": 5})
    assert (
        first
        == again
        == [
            {
                "user_id": "u3",
                "product_id": "p3",
                "quantity": 5,
                "value": 1.25,
                "updated_at": "2026-11-27T06:00:00.000Z",
            }
        ]
    )
    assert first[0] is again[0]


def test_a_reload_keeps_the_rendering_of_unchanged_rows_and_renders_changed_ones() -> None:
    before = snapshot(ROWS)
    rendered = before.select({})
    changed = ("u2", "p1", 3, Decimal("3.50"), AT)
    after = snapshot([ROWS[0], ROWS[1], changed, ROWS[3]], previous=before)

    rows = after.select({})
    assert [r["quantity"] for r in rows] == [2, 1, 3, 5]
    assert rows[0] is rendered[0] and rows[3] is rendered[3]
    assert rows[2] is not rendered[2]


def test_rows_that_cannot_be_hashed_are_rendered_again() -> None:
    listed = StructType([*SCHEMA.fields[:2], StructField("ids", ArrayType(LongType()))])
    rows = [("u1", "p1", [1, 2])]

    before = snapshot(rows, schema=listed)
    first = before.select({})  # rendered: the next snapshot tries to carry it
    again = snapshot(rows, previous=before, schema=listed).select({})
    assert again == first == [{"user_id": "u1", "product_id": "p1", "ids": [1, 2]}]
    assert again[0] is not first[0]


@ORDERS
def test_changed_replaces_the_rows_of_the_touched_values_and_keeps_the_rest_rendered(
    ordered_on: tuple[str, ...],
) -> None:
    before = snapshot(ROWS, ordered_on=ordered_on)
    untouched = before.select({"user_id": "u2"})[0]
    after = before.changed(
        split_by=("user_id",),
        touched={("u1",), ("u0",)},
        rows=[("u1", "p2", 4, Decimal("10.00"), AT), ("u0", "p9", 1, Decimal("2.00"), AT)],
        order_by=("user_id", "product_id"),
        version=4,
        refreshed_at=AT,
    )

    assert [(r["user_id"], r["product_id"], r["quantity"]) for r in after.select({})] == [
        ("u0", "p9", 1),
        ("u1", "p2", 4),  # u1's p1 line is shown no more
        ("u2", "p1", 2),
        ("u3", "p3", 5),
    ]
    assert after.select({"user_id": "u1", "product_id": "p1"}) == []
    assert after.version == 4 and before.version == 3 and len(before) == 4
    assert after.select({"user_id": "u2"})[0] is untouched, "an untouched row keeps its rendering"


@ORDERS
def test_changed_orders_nulls_first_as_spark_does(ordered_on: tuple[str, ...]) -> None:
    after = snapshot(ROWS[:1], ordered_on=ordered_on).changed(
        split_by=("user_id",),
        touched={(None,)},
        rows=[(None, "p1", 1, Decimal("1.00"), AT)],
        order_by=("user_id", "product_id"),
        version=4,
        refreshed_at=AT,
    )

    assert [r["user_id"] for r in after.select({})] == [None, "u1"]


def test_a_point_query_finds_a_null_key_and_a_value_of_another_type_finds_nothing() -> None:
    rows = [(None, "p1", 1, Decimal("1.00"), AT), *ROWS]
    carts = snapshot(rows, ordered_on=KEY)
    assert [r["quantity"] for r in carts.select({"user_id": None})] == [1]
    assert carts.select({"user_id": 7}) == []


def test_only_leading_columns_of_types_ordered_as_in_spark_are_searched() -> None:
    floats = StructType([StructField("user_id", StringType()), StructField("x", DoubleType())])
    rows = [("u1", float("nan")), ("u1", 1.0)]
    held = snapshot(rows, schema=floats, ordered_on=("user_id", "x"))
    assert held.ordered_on == ("user_id",)
    assert [r["x"] for r in held.select({"x": 1.0})] == [1.0]


USERS = st.sampled_from([None, "u0", "u1", "u2", "u3", "u4"])
LINES = st.tuples(USERS, st.sampled_from([None, "p1", "p2", "p3"]), st.integers(0, 3))


def spark_order(row: tuple) -> tuple:
    """Spark's ascending order on the key, nulls first, written out here."""
    return tuple((v is not None, v) for v in row[:2])


@given(
    before=st.lists(LINES, max_size=25),
    touched=st.sets(USERS, max_size=4),
    fresh=st.lists(LINES, max_size=10),
)
def test_changed_gives_the_untouched_rows_and_the_touched_values_new_rows_in_order(
    before: list[tuple], touched: set[str | None], fresh: list[tuple]
) -> None:
    lines = StructType(
        [
            StructField("user_id", StringType()),
            StructField("product_id", StringType()),
            StructField("quantity", LongType()),
        ]
    )
    fresh = [row for row in fresh if row[0] in touched]
    expected = sorted([row for row in before if row[0] not in touched] + fresh, key=spark_order)
    for ordered_on in (KEY, ()):
        held = snapshot(sorted(before, key=spark_order), schema=lines, ordered_on=ordered_on)
        after = held.changed(
            split_by=("user_id",),
            touched={(user,) for user in touched},
            rows=fresh,
            order_by=KEY,
            version=4,
            refreshed_at=AT,
        )
        got = [tuple(r.values()) for r in after.select({})]
        assert sorted(got, key=spark_order) == sorted(expected, key=spark_order)
        assert [spark_order(r) for r in got] == [spark_order(r) for r in expected]
        for user in ("u1", None):
            assert after.select({"user_id": user}) == [
                dict(zip(lines.names, r, strict=True)) for r in expected if r[0] == user
            ]
