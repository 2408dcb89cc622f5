import random
from datetime import timedelta

import pytest
from pyspark.sql import DataFrame, Row
from pyspark.sql import functions as F
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


def test_conversion_context_keeps_each_hours_first_and_last_view_and_the_purchases_ahead(
    events, ctx
):
    step = T0 + 2 * HOUR  # steps of the look-back's length start on the hour
    watermark = step + timedelta(minutes=30)
    minute = timedelta(minutes=1)
    earlier = events(
        [
            ("page_view", 1, 10, None, None, step + minute),  # first of (1, 10)'s hour
            ("page_view", 1, 10, None, None, step + 20 * minute),  # between: met by neither
            ("page_view", 1, 10, None, None, step + 59 * minute),  # last of the hour
            ("page_view", 1, 10, None, None, step + HOUR),  # the next hour's only view
            ("page_view", 2, 10, None, None, step + 20 * minute),  # (2, 10)'s only view
            ("purchase", 1, 10, 1, 1.0, watermark - MS),  # no page view to come precedes it
            ("purchase", 1, 10, 1, 1.0, watermark),  # one on time may
            ("add_to_cart", 1, 10, 1, 1.0, watermark),  # never a partner
        ]
    )
    kept = conversions.context_kept(earlier, ctx().settings, watermark)
    assertDataFrameEqual(
        kept.select("event_type", "user_id", "product_id", "event_time"),
        [
            Row("page_view", 1, 10, step + minute),
            Row("page_view", 1, 10, step + 59 * minute),
            Row("page_view", 1, 10, step + HOUR),
            Row("page_view", 2, 10, step + 20 * minute),
            Row("purchase", 1, 10, watermark),
        ],
    )
    assert kept.columns == earlier.columns, "whole events, as the join reads them"


def _converted(ctx, earlier: DataFrame, own: DataFrame, context: DataFrame) -> DataFrame:
    """The state after ``own`` met ``context``, merged onto ``earlier``'s own state."""
    met = own.unionByName(conversions.partners(own, context, ctx.settings))
    view = conversions.VIEW
    return view.merge(view.compute(earlier, ctx).unionByName(view.compute(met, ctx)))


def test_the_kept_context_converts_every_later_purchase_as_every_earlier_event_does(events, ctx):
    """Three hours of views and purchases, a few of each user and product, then on-time
    events (at or after the watermark, as a lane's are): the same conversions either way."""
    rng = random.Random(7)
    watermark = T0 + 2 * HOUR + timedelta(minutes=30)

    def row(at: timedelta, purchases: float) -> tuple:
        user, product = rng.randint(1, 100), rng.randint(10, 11)
        if rng.random() < purchases:
            return ("purchase", user, product, 1, 1.0, T0 + at)
        return ("page_view", user, product, None, None, T0 + at)

    def seconds(low: int, high: int) -> timedelta:
        return timedelta(seconds=rng.randint(low, high))

    earlier = [row(seconds(0, 3 * 3600), 0.3) for _ in range(4_000)]
    own = [row(watermark - T0 + seconds(0, 3600), 0.5) for _ in range(600)]
    every = events(earlier + own)
    before = every.where(F.col("offset") < len(earlier))
    mine = every.where(F.col("offset") >= len(earlier))
    c = ctx()
    kept = conversions.context_kept(before, c.settings, watermark)
    assert kept.count() < before.count() / 2, "the point: fewer to read"
    assertDataFrameEqual(_converted(c, before, mine, kept), _converted(c, before, mine, before))


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
