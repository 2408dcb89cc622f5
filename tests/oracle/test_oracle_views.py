from __future__ import annotations

import itertools
import time
from datetime import datetime, timedelta
from decimal import Decimal

import pytest

from config.settings import ViewSettings
from oracle import (
    Event,
    cart_state,
    compute_views,
    conversions,
    events_by_type,
    revenue_by_category,
    user_sessions,
)

pytestmark = pytest.mark.unit

T0 = datetime(2026, 11, 1, 10, 0)
MS = timedelta(milliseconds=1)
MIN = timedelta(minutes=1)
_offsets = itertools.count()


def ev(
    event_type: str,
    at: datetime,
    user: int = 1,
    product: int = 10,
    quantity: int | None = 1,
    price: str | None = None,
) -> Event:
    offset = next(_offsets)
    if event_type == "purchase" and price is None:
        price = "1.00"
    return Event(
        event_id=f"e{offset}",
        event_type=event_type,
        user_id=user,
        product_id=product,
        quantity=quantity,
        price=Decimal(price) if price is not None else None,
        event_time=at,
        partition=0,
        offset=offset,
    )


# revenue_by_category


def test_revenue_tumbling_boundaries_and_categories() -> None:
    events = [
        ev("purchase", T0, product=1, quantity=2, price="19.99"),  # exactly at a window start
        ev("purchase", T0 + MIN - MS, product=1, quantity=1, price="0.02"),
        ev("purchase", T0 + MIN, product=1, quantity=1, price="5.00"),  # next window
        ev("purchase", T0 + 10 * MS, product=2, quantity=3, price="1.10"),
        ev("purchase", T0 + 20 * MS, product=99, quantity=1, price="7.00"),  # not in catalog
        ev("add_to_cart", T0, product=1, quantity=5),
        ev("page_view", T0, product=1, quantity=None),
    ]
    rows = revenue_by_category(events, {1: "books", 2: "toys"})
    assert rows == [
        {
            "window_start": T0,
            "window_end": T0 + MIN,
            "category": "books",
            "orders": 2,
            "revenue": Decimal("40.00"),
        },
        {
            "window_start": T0,
            "window_end": T0 + MIN,
            "category": "toys",
            "orders": 1,
            "revenue": Decimal("3.30"),
        },
        {
            "window_start": T0,
            "window_end": T0 + MIN,
            "category": "unknown",
            "orders": 1,
            "revenue": Decimal("7.00"),
        },
        {
            "window_start": T0 + MIN,
            "window_end": T0 + 2 * MIN,
            "category": "books",
            "orders": 1,
            "revenue": Decimal("5.00"),
        },
    ]
    assert str(rows[0]["revenue"]) == "40.00"
    assert str(rows[2]["revenue"]) == "7.00"


def test_revenue_respects_tumbling_window_setting() -> None:
    settings = ViewSettings(tumbling_window=timedelta(minutes=5))
    events = [
        ev("purchase", T0 + 4 * MIN + 59_999 * MS),
        ev("purchase", T0 + 5 * MIN),
        ev("purchase", T0 - MS),
    ]
    rows = revenue_by_category(events, {}, settings)
    assert [(r["window_start"], r["window_end"], r["orders"]) for r in rows] == [
        (T0 - 5 * MIN, T0, 1),
        (T0, T0 + 5 * MIN, 1),
        (T0 + 5 * MIN, T0 + 10 * MIN, 1),
    ]


def test_windows_are_aligned_to_epoch() -> None:
    settings = ViewSettings(tumbling_window=timedelta(minutes=7))
    at = datetime(1970, 1, 1, 0, 15)
    rows = revenue_by_category([ev("purchase", at)], {}, settings)
    assert rows[0]["window_start"] == datetime(1970, 1, 1, 0, 14)
    assert rows[0]["window_end"] == datetime(1970, 1, 1, 0, 21)


# events_by_type


def test_hopping_each_event_in_ten_windows() -> None:
    at = T0 + 30 * 1000 * MS  # 10:00:30
    rows = events_by_type([ev("page_view", at)])
    starts = [r["window_start"] for r in rows]
    assert starts == [T0 - k * MIN for k in range(9, -1, -1)]
    assert all(r["window_end"] - r["window_start"] == 10 * MIN for r in rows)
    assert all(r["window_start"] <= at < r["window_end"] for r in rows)
    assert all(r["events"] == 1 and r["distinct_users"] == 1 for r in rows)


def test_hopping_event_at_window_start() -> None:
    rows = events_by_type([ev("page_view", T0)])
    starts = [r["window_start"] for r in rows]
    assert starts[-1] == T0  # the window starting exactly at the event holds it
    assert starts[0] == T0 - 9 * MIN  # [09:51, 10:01) holds it, [09:50, 10:00) does not
    assert len(rows) == 10


def test_hopping_counts_and_distinct_users() -> None:
    events = [
        ev("page_view", T0, user=1),
        ev("page_view", T0 + 5 * MIN, user=1),
        ev("page_view", T0 + 5 * MIN, user=2),
        ev("purchase", T0 + 5 * MIN, user=2),
    ]
    rows = {(r["window_start"], r["event_type"]): r for r in events_by_type(events)}
    both = rows[(T0, "page_view")]
    assert (both["events"], both["distinct_users"], both["distinct_users_approx"]) == (3, 2, 2)
    later = rows[(T0 + MIN, "page_view")]
    assert (later["events"], later["distinct_users"]) == (2, 2)
    early = rows[(T0 - 5 * MIN, "page_view")]
    assert (early["events"], early["distinct_users"]) == (1, 1)
    assert rows[(T0 + 5 * MIN, "purchase")]["events"] == 1
    assert (T0 - 5 * MIN, "purchase") not in rows
    assert len([k for k in rows if k[1] == "purchase"]) == 10
    assert len([k for k in rows if k[1] == "page_view"]) == 15
    keys = [(r["window_start"], r["event_type"]) for r in events_by_type(events)]
    assert keys == sorted(keys)


def test_hopping_respects_settings() -> None:
    settings = ViewSettings(hop_window=timedelta(minutes=6), hop_slide=timedelta(minutes=2))
    at = T0 + 3 * MIN
    rows = events_by_type([ev("add_to_cart", at)], settings)
    assert [r["window_start"] for r in rows] == [T0 - 2 * MIN, T0, T0 + 2 * MIN]
    assert all(r["window_end"] - r["window_start"] == 6 * MIN for r in rows)


# user_sessions


def test_sessions_split_just_over_the_gap() -> None:
    events = [ev("page_view", T0), ev("page_view", T0 + 30 * MIN + MS)]
    rows = user_sessions(events)
    assert [(r["session_start"], r["session_end"], r["events"]) for r in rows] == [
        (T0, T0 + 30 * MIN, 1),
        (T0 + 30 * MIN + MS, T0 + 60 * MIN + MS, 1),
    ]


def test_sessions_join_at_exactly_the_gap() -> None:
    events = [ev("page_view", T0), ev("page_view", T0 + 30 * MIN)]
    rows = user_sessions(events)
    assert [(r["session_start"], r["session_end"], r["events"]) for r in rows] == [
        (T0, T0 + 60 * MIN, 2),
    ]


def test_sessions_join_just_under_the_gap() -> None:
    second = T0 + 30 * MIN - MS  # 29:59.999 later
    events = [ev("page_view", second), ev("page_view", T0)]  # input order does not matter
    rows = user_sessions(events)
    assert rows == [
        {
            "user_id": 1,
            "session_start": T0,
            "session_end": second + 30 * MIN,
            "events": 2,
            "purchases": 0,
            "revenue": Decimal("0.00"),
        }
    ]


def test_sessions_count_purchases_and_revenue_per_user() -> None:
    events = [
        ev("page_view", T0, user=2),
        ev("purchase", T0 + MIN, user=2, quantity=3, price="2.50"),
        ev("purchase", T0 + 2 * MIN, user=2, quantity=1, price="0.01"),
        ev("purchase", T0 + 2 * MIN, user=1, quantity=1, price="9.99"),
        ev("add_to_cart", T0 + 40 * MIN, user=2),
    ]
    rows = user_sessions(events)
    assert [(r["user_id"], r["session_start"]) for r in rows] == [
        (1, T0 + 2 * MIN),
        (2, T0),
        (2, T0 + 40 * MIN),
    ]
    assert (rows[0]["purchases"], rows[0]["revenue"]) == (1, Decimal("9.99"))
    assert (rows[1]["events"], rows[1]["purchases"], str(rows[1]["revenue"])) == (3, 2, "7.51")
    assert rows[1]["session_end"] == T0 + 32 * MIN
    assert (rows[2]["events"], rows[2]["purchases"], rows[2]["revenue"]) == (1, 0, Decimal(0))


def test_sessions_respect_gap_setting() -> None:
    settings = ViewSettings(session_gap=timedelta(minutes=5))
    events = [
        ev("page_view", T0),
        ev("page_view", T0 + 5 * MIN - MS),
        ev("page_view", T0 + 15 * MIN),
    ]
    rows = user_sessions(events, settings)
    assert [(r["events"], r["session_end"]) for r in rows] == [
        (2, T0 + 10 * MIN - MS),
        (1, T0 + 20 * MIN),
    ]


# conversions


def test_conversion_cases() -> None:
    p = T0 + 2 * MIN
    events = [
        ev("page_view", p - 60 * MIN, user=1, product=1),  # exactly 60 min before
        ev("purchase", p, user=1, product=1),  # converted
        ev("page_view", p - 60 * MIN - MS, user=2, product=1),  # 60 min + 1 ms before
        ev("purchase", p, user=2, product=1),  # not converted
        ev("purchase", p, user=3, product=1),  # not: view comes after
        ev("page_view", p + MS, user=3, product=1),
        ev("page_view", p - MIN, user=4, product=1),  # two matching views
        ev("page_view", p - 2 * MIN, user=4, product=1),
        ev("purchase", p, user=4, product=1),  # converted once
        ev("page_view", p - MIN, user=5, product=2),  # other product
        ev("purchase", p, user=5, product=1),  # not
        ev("page_view", p - MIN, user=99, product=1),  # other user
        ev("purchase", p, user=6, product=1),  # not
        ev("page_view", p, user=7, product=1),  # same instant: inclusive
        ev("purchase", p, user=7, product=1),  # converted
        ev("add_to_cart", p - MIN, user=8, product=1),  # not a page view
        ev("purchase", p, user=8, product=1),  # not
    ]
    assert conversions(events) == [
        {"window_start": p, "window_end": p + MIN, "purchases": 8, "converted": 3}
    ]


def test_conversion_windows_and_settings() -> None:
    settings = ViewSettings(
        conversion_window=timedelta(minutes=5), conversion_lookback=timedelta(minutes=10)
    )
    events = [
        ev("page_view", T0 - 11 * MIN),
        ev("purchase", T0 + 59 * 1000 * MS),  # 60:59 after the view: not with 10 min lookback
        ev("page_view", T0 + 6 * MIN),
        ev("purchase", T0 + 7 * MIN),
    ]
    assert conversions(events, settings) == [
        {"window_start": T0, "window_end": T0 + 5 * MIN, "purchases": 1, "converted": 0},
        {"window_start": T0 + 5 * MIN, "window_end": T0 + 10 * MIN, "purchases": 1, "converted": 1},
    ]
    assert conversions([ev("page_view", T0)]) == []


# cart_state


def test_cart_integral() -> None:
    events = [
        ev("add_to_cart", T0, user=1, product=1, quantity=3),
        ev("remove_from_cart", T0 + MIN, user=1, product=1, quantity=1),
        ev("purchase", T0 + 2 * MIN, user=1, product=1, quantity=1),
        ev("page_view", T0 + 9 * MIN, user=1, product=1, quantity=None),  # does not touch
        ev("add_to_cart", T0, user=1, product=2, quantity=2),
        ev("purchase", T0 + MIN, user=1, product=2, quantity=2),  # back to 0: hidden
        ev("remove_from_cart", T0 + 5 * MIN, user=2, product=1, quantity=2),  # negative
        ev("add_to_cart", T0 + 3 * MIN, user=2, product=1, quantity=1),
        ev("page_view", T0, user=3, product=1, quantity=None),  # no line at all
    ]
    assert cart_state(events) == [
        {"user_id": 1, "product_id": 1, "quantity": 1, "updated_at": T0 + 2 * MIN},
        {"user_id": 2, "product_id": 1, "quantity": -1, "updated_at": T0 + 5 * MIN},
    ]


# all together


def test_compute_views_names_and_columns() -> None:
    events = [
        ev("page_view", T0),
        ev("add_to_cart", T0 + MS, quantity=2),
        ev("purchase", T0 + 2 * MS),
    ]
    views = compute_views(events, {10: "books"}, ViewSettings(burst_threshold=1))
    columns = {
        "revenue_by_category": ["window_start", "window_end", "category", "orders", "revenue"],
        "events_by_type": [
            "window_start",
            "window_end",
            "event_type",
            "events",
            "distinct_users",
            "distinct_users_approx",
        ],
        "user_sessions": [
            "user_id",
            "session_start",
            "session_end",
            "events",
            "purchases",
            "revenue",
        ],
        "conversions": ["window_start", "window_end", "purchases", "converted"],
        "cart_state": ["user_id", "product_id", "quantity", "updated_at"],
        "purchase_bursts": ["user_id", "burst_at", "window_start", "purchases"],
        "corrected_purchases": ["window_start", "window_end", "purchases"],
        "cart_value_by_product": ["product_id", "category", "price", "in_carts", "cart_value"],
    }
    assert list(views) == list(columns)
    for name, rows in views.items():
        assert rows, name
        for r in rows:
            assert list(r) == columns[name], name
    assert [r["quantity"] for r in views["cart_state"]] == [1]
    assert views["conversions"][0]["converted"] == 1


def test_two_hundred_thousand_events_are_fast() -> None:
    events = []
    types = ["page_view", "page_view", "add_to_cart", "remove_from_cart", "purchase"]
    for i in range(200_000):
        event_type = types[i % 5]
        events.append(
            ev(
                event_type,
                T0 + timedelta(milliseconds=i * 1_500),
                user=i % 997,
                product=i % 89,
                quantity=None if event_type == "page_view" else 1 + i % 3,
                price="12.34" if event_type == "purchase" else None,
            )
        )
    started = time.perf_counter()
    views = compute_views(events, {p: f"c{p % 5}" for p in range(80)}, ViewSettings())
    elapsed = time.perf_counter() - started
    assert elapsed < 10, elapsed
    assert sum(r["orders"] for r in views["revenue_by_category"]) == 40_000
    assert sum(r["purchases"] for r in views["conversions"]) == 40_000
    assert sum(r["events"] for r in views["events_by_type"]) == 10 * 200_000
    assert sum(r["events"] for r in views["user_sessions"]) == 200_000
