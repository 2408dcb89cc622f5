from datetime import timedelta

import pytest
from pyspark.sql import Row
from pyspark.testing import assertDataFrameEqual

from tests.views.conftest import T0
from views import cart_state, conversions

pytestmark = pytest.mark.integration
MS = timedelta(milliseconds=1)
HOUR = timedelta(minutes=60)


def test_conversion_lookback_is_inclusive_at_exactly_sixty_minutes(events, ctx):
    p = T0 + 2 * HOUR
    frame = events(
        [
            ("page_view", 1, 10, None, None, p - HOUR),  # exactly 60 min: converts
            ("purchase", 1, 10, 1, 1.0, p),
            ("page_view", 2, 10, None, None, p - HOUR - MS),  # 60 min + 1 ms: does not
            ("purchase", 2, 10, 1, 1.0, p),
            ("page_view", 3, 10, None, None, p + MS),  # after the purchase: does not
            ("purchase", 3, 10, 1, 1.0, p),
            ("page_view", 4, 10, None, None, p),  # same instant: converts
            ("page_view", 4, 10, None, None, p - MS),  # two matches count once
            ("purchase", 4, 10, 1, 1.0, p),
            ("page_view", 5, 11, None, None, p - MS),  # other product: does not
            ("page_view", 6, 10, None, None, p - MS),  # other user: does not
            ("purchase", 5, 10, 1, 1.0, p),
        ]
    )
    out = conversions.VIEW.evaluate(frame, ctx())
    assertDataFrameEqual(
        out, [Row(window_start=p, window_end=p + timedelta(minutes=1), purchases=5, converted=2)]
    )


def test_conversion_merge_counts_a_purchase_once_across_parts(events, ctx):
    p = T0 + HOUR
    view_part = events([("page_view", 1, 10, None, None, p - MS), ("purchase", 1, 10, 1, 1.0, p)])
    c = ctx()
    whole = conversions.VIEW.compute(view_part, c)
    merged = conversions.VIEW.merge(whole.unionByName(whole))
    assertDataFrameEqual(conversions.VIEW.present(merged), conversions.VIEW.present(whole))


def test_cart_is_the_integral_of_its_changes(events, ctx):
    frame = events(
        [
            ("add_to_cart", 1, 10, 3, 2.0, T0),
            ("remove_from_cart", 1, 10, 1, None, T0 + MS),
            ("add_to_cart", 1, 11, 1, 2.0, T0 + 2 * MS),
            ("purchase", 1, 11, 1, 2.0, T0 + 3 * MS),  # line bought: quantity 0, hidden
            ("remove_from_cart", 2, 10, 2, None, T0),  # add missing: shown negative
            ("page_view", 1, 12, None, None, T0 + 4 * MS),  # not a cart event
        ]
    )
    out = cart_state.VIEW.evaluate(frame, ctx())
    assertDataFrameEqual(
        out,
        [
            Row(user_id=1, product_id=10, quantity=2, updated_at=T0 + MS),
            Row(user_id=2, product_id=10, quantity=-2, updated_at=T0),
        ],
    )


def test_cart_order_does_not_matter(events, ctx):
    rows = [("add_to_cart", 1, 10, 3, 2.0, T0), ("remove_from_cart", 1, 10, 1, None, T0 + MS)]
    forward = cart_state.VIEW.evaluate(events(rows), ctx())
    backward = cart_state.VIEW.evaluate(events(rows[::-1]), ctx())
    assertDataFrameEqual(forward, backward)


def test_conversion_partners_are_the_earlier_events_that_can_still_meet_the_new_ones(events, ctx):
    p = T0 + 2 * HOUR
    minute = timedelta(minutes=1)
    own = events([("purchase", 1, 10, 1, 1.0, p), ("page_view", 2, 20, None, None, p)])
    earlier = events(
        [
            ("page_view", 1, 10, None, None, p - HOUR),  # the purchase may follow it
            ("purchase", 2, 20, 1, 1.0, p + HOUR),  # it may follow the new page view
            ("page_view", 1, 10, None, None, p - HOUR - MS),  # past the look-back
            ("page_view", 1, 10, None, None, p + MS),  # after the purchase
            ("purchase", 2, 20, 1, 1.0, p - MS),  # before the page view
            ("purchase", 2, 20, 1, 1.0, p + HOUR + MS),  # past the look-back after it
            ("purchase", 1, 10, 1, 1.0, p - minute),  # no new page view of (1, 10)
            ("page_view", 2, 20, None, None, p - minute),  # no new purchase of (2, 20)
            ("add_to_cart", 1, 10, 1, 1.0, p - minute),  # never a partner
            ("page_view", 1, 11, None, None, p - minute),  # another product
            ("purchase", 3, 30, 1, 1.0, p),  # joined when it arrived
        ]
    )
    kept = conversions.partners(own, earlier, ctx().settings)
    assertDataFrameEqual(
        kept.select("event_type", "user_id", "product_id", "event_time"),
        [
            Row("page_view", 1, 10, p - HOUR),
            Row("purchase", 2, 20, p + HOUR),
        ],
    )
