"""A join view's context: only the earlier events that can still meet this micro-batch's."""

from __future__ import annotations

import pytest
from pyspark.sql import Row
from pyspark.testing import assertDataFrameEqual

from speed_layer.micro_batch import partners_of
from views import cart_state, conversions

pytestmark = pytest.mark.integration
SCHEMA = "event_type string, user_id long, product_id long"


def test_only_events_sharing_the_join_columns_with_the_micro_batch_stay(spark):
    own = spark.createDataFrame([("purchase", 1, 10), ("page_view", 2, 20)], SCHEMA)
    earlier = spark.createDataFrame(
        [
            ("page_view", 1, 10),  # the purchase's partner
            ("purchase", 2, 20),  # a purchase whose view arrives only now
            ("page_view", 1, 11),  # same user, other product
            ("purchase", 3, 30),  # joined when it arrived; nothing new can meet it
        ],
        SCHEMA,
    )
    assertDataFrameEqual(
        partners_of(conversions.VIEW, own, earlier).select(*earlier.columns),
        [Row("page_view", 1, 10), Row("purchase", 2, 20)],
    )


def test_a_view_without_join_columns_keeps_its_context(spark):
    earlier = spark.createDataFrame([("page_view", 3, 30)], SCHEMA)
    assert partners_of(cart_state.VIEW, earlier.limit(0), earlier) is earlier
