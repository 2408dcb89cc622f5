from datetime import timedelta
from decimal import Decimal

import pytest
from pyspark.sql import Row
from pyspark.testing import assertDataFrameEqual

from tests.views.conftest import T0
from views import events_by_type, revenue_by_category, user_sessions

pytestmark = pytest.mark.integration
MIN = timedelta(minutes=1)


def test_tumbling_window_boundaries_and_category_join(events, ctx):
    frame = events(
        [
            ("purchase", 1, 10, 2, 5.00, T0),  # exactly at window start
            ("purchase", 2, 10, 1, 1.25, T0 + MIN - timedelta(milliseconds=1)),
            ("purchase", 3, 20, 1, 9.99, T0 + MIN),  # next window
            ("purchase", 4, 99, 1, 3.00, T0 + MIN),  # not in catalog
            ("page_view", 1, 10, None, None, T0),  # not a purchase
        ]
    )
    out = revenue_by_category.VIEW.evaluate(frame, ctx({10: "books", 20: "toys"}))
    assertDataFrameEqual(
        out,
        [
            Row(
                window_start=T0,
                window_end=T0 + MIN,
                category="books",
                orders=2,
                revenue=Decimal("11.25"),
            ),
            Row(
                window_start=T0 + MIN,
                window_end=T0 + 2 * MIN,
                category="toys",
                orders=1,
                revenue=Decimal("9.99"),
            ),
            Row(
                window_start=T0 + MIN,
                window_end=T0 + 2 * MIN,
                category="unknown",
                orders=1,
                revenue=Decimal("3.00"),
            ),
        ],
    )


def test_tumbling_window_size_comes_from_config(events, ctx):
    frame = events([("purchase", 1, 10, 1, 1.00, T0 + 4 * MIN)])
    out = revenue_by_category.VIEW.evaluate(frame, ctx({10: "books"}, tumbling_window="5m"))
    assert out.select("window_start", "window_end").first() == (T0, T0 + 5 * MIN)


def test_hopping_window_puts_each_event_in_ten_windows(events, ctx):
    frame = events(
        [
            ("page_view", 1, 10, None, None, T0 + timedelta(seconds=30)),
            ("page_view", 2, 10, None, None, T0 + timedelta(seconds=40)),
            ("add_to_cart", 1, 10, 1, 2.0, T0 + timedelta(seconds=50)),
        ]
    )
    out = events_by_type.VIEW.evaluate(frame, ctx()).where("event_type = 'page_view'")
    starts = sorted(r.window_start for r in out.collect())
    assert starts == [T0 - k * MIN for k in range(9, -1, -1)]
    assert {(r.events, r.distinct_users, r.distinct_users_approx) for r in out.collect()} == {
        (2, 2, 2)
    }


def test_session_continues_at_exactly_the_gap_and_splits_just_after(events, ctx):
    gap, ms = timedelta(minutes=30), timedelta(milliseconds=1)
    frame = events(
        [
            ("page_view", 1, 10, None, None, T0),
            ("purchase", 1, 10, 2, 4.50, T0 + gap),  # exactly the gap: same session
            ("page_view", 1, 10, None, None, T0 + 2 * gap + ms),  # gap + 1 ms: a new session
            ("page_view", 2, 10, None, None, T0),
        ]
    )
    out = user_sessions.VIEW.evaluate(frame, ctx())
    assertDataFrameEqual(
        out,
        [
            Row(
                user_id=1,
                session_start=T0,
                session_end=T0 + 2 * gap,
                events=2,
                purchases=1,
                revenue=Decimal("9.00"),
            ),
            Row(
                user_id=1,
                session_start=T0 + 2 * gap + ms,
                session_end=T0 + 3 * gap + ms,
                events=1,
                purchases=0,
                revenue=Decimal("0.00"),
            ),
            Row(
                user_id=2,
                session_start=T0,
                session_end=T0 + gap,
                events=1,
                purchases=0,
                revenue=Decimal("0.00"),
            ),
        ],
    )
