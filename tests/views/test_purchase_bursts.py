"""purchase_bursts in Spark: literals, the oracle, and a burst split across partial states."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from pyspark.sql import functions as F

import oracle
from config.settings import ViewSettings
from tests.support.workload import assert_view_matches
from tests.views.conftest import T0, make_events
from views.base import ViewContext
from views.purchase_bursts import VIEW, reaching, widest_window

pytestmark = pytest.mark.integration
M = timedelta(minutes=1)
S = timedelta(seconds=1)
ROWS = [  # (event_type, user, product, quantity, price, event_time)
    ("purchase", 1, 1, 1, 1.0, T0 + S / 2),
    ("purchase", 1, 2, 1, 1.0, T0 + 3 * M),
    ("purchase", 1, 3, 1, 1.0, T0 + 4 * M + 59 * S),  # 3 within 5 min, across minute bounds
    ("purchase", 1, 4, 1, 1.0, T0 + 5 * M + S),  # 10:00:00.5 has left: 3 again
    ("purchase", 1, 5, 1, 1.0, T0 + 20 * M),  # alone
    ("purchase", 2, 1, 1, 1.0, T0),
    ("purchase", 2, 1, 1, 1.0, T0 + 5 * M),  # 10:00 is exactly 5 min before: inside
    ("page_view", 2, 1, None, None, T0 + 2 * M),  # not a purchase
    ("purchase", 2, 1, 1, 1.0, T0 + 5 * M + S),  # 10:00 is out, 10:02 in: 3
    ("purchase", 3, 1, 1, 1.0, T0),
    ("purchase", 3, 1, 1, 1.0, T0 + M),
    ("purchase", 2, 1, 1, 1.0, T0 + 2 * M),  # arrives last, fills user 2's intervals
]


def _burst(user: int, at, purchases: int) -> dict:
    return {"user_id": user, "burst_at": at, "window_start": at - 5 * M, "purchases": purchases}


EXPECTED = [
    _burst(1, T0 + 4 * M + 59 * S, 3),
    _burst(1, T0 + 5 * M + S, 3),
    _burst(2, T0 + 5 * M, 3),
    _burst(2, T0 + 5 * M + S, 3),
]


def _oracle(settings: ViewSettings) -> list[dict]:
    events = [
        oracle.Event(f"e{i}", kind, user, pid, qty, None, t, 0, i)
        for i, (kind, user, pid, qty, _, t) in enumerate(ROWS)
    ]
    return oracle.purchase_bursts(events, settings)


def test_bursts_are_every_interval_ending_at_a_purchase(spark):
    ctx = ViewContext(ViewSettings())
    actual = VIEW.evaluate(make_events(spark, ROWS), ctx)
    assert_view_matches(actual, EXPECTED, VIEW.name)
    assert_view_matches(actual, _oracle(ViewSettings()), VIEW.name)


def test_a_burst_split_over_parts_is_found_once_they_merge(spark):
    """Each part alone holds no burst; appended partial states (one per micro-batch, as
    the streaming layers keep them) give the whole answer, compacted or not."""
    events = make_events(spark, ROWS)
    ctx = ViewContext(ViewSettings())
    parts = [events.where(F.col("offset") % 3 == k) for k in range(3)]
    for part in parts:
        assert VIEW.evaluate(part, ctx).count() == 0
    state = VIEW.compute(parts[0], ctx)
    for part in parts[1:]:
        state = state.unionByName(VIEW.compute(part, ctx))
    assert_view_matches(VIEW.serve(state), EXPECTED, VIEW.name)
    assert_view_matches(VIEW.serve(VIEW.merge(state.unionByName(state))), EXPECTED, VIEW.name)


def test_purchases_at_one_instant_count_in_every_interval_they_are_in(spark):
    """Purchases sharing a time are one interval end and each count (the ordered pass
    puts an end's own instant inside, its interval's start too)."""
    same = [("purchase", 9, p, 1, 1.0, T0 + M) for p in (1, 2, 3)]
    rows = [*same, ("purchase", 9, 4, 1, 1.0, T0 + 6 * M), ("purchase", 9, 5, 1, 1.0, T0 + 7 * M)]
    actual = VIEW.evaluate(make_events(spark, rows), ViewContext(ViewSettings()))
    assert_view_matches(actual, [_burst(9, T0 + M, 3), _burst(9, T0 + 6 * M, 4)], VIEW.name)


def test_threshold_and_interval_from_settings(spark):
    settings = ViewSettings(burst_threshold=2, burst_window=timedelta(minutes=1))
    actual = VIEW.evaluate(make_events(spark, ROWS), ViewContext(settings))
    expected = _oracle(settings)
    assert [(r["user_id"], r["burst_at"]) for r in expected] == [
        (1, T0 + 5 * M + S),
        (2, T0 + 5 * M + S),
        (3, T0 + M),
    ]
    assert_view_matches(actual, expected, VIEW.name)


@pytest.mark.parametrize(
    ("since", "reached"),
    [(T0, 11), (T0 + 3 * M, 11), (T0 + 5 * M, 11), (T0 + 5 * M + S / 2, 9), (T0 + 21 * M, 1)],
)
def test_the_purchases_a_bound_reaches_give_every_burst_from_it(spark, since, reached):
    """What a lane's alerts read: the bursts at or after ``since`` from only the purchases
    in ``[since - 5 min, ...]``, taken before the merge (every purchase twice here), give
    what the whole state gives."""
    ctx = ViewContext(ViewSettings())
    state = VIEW.compute(make_events(spark, ROWS), ctx)
    state = state.unionByName(state)
    assert reaching(state, since).count() == 2 * reached
    bounded = VIEW.serve(reaching(state, since)).where(F.col("burst_at") >= F.lit(since))
    assert_view_matches(bounded, [b for b in EXPECTED if b["burst_at"] >= since], VIEW.name)


def test_a_bound_no_window_is_wider_than_skips_the_files_of_earlier_purchases(spark, tmp_path):
    """Only the files the bursts reach are opened: the earlier purchases' file is gone
    from under the table, and the bounded read still answers (the unbounded one cannot)."""
    ctx = ViewContext(ViewSettings())
    state = VIEW.compute(make_events(spark, ROWS), ctx)
    path = str(tmp_path / "state")
    late = F.col("purchased_at") >= F.lit(T0 + 10 * M)
    state.where(~late).coalesce(1).write.format("delta").save(path)
    state.where(late).coalesce(1).write.format("delta").mode("append").save(path)
    table = spark.read.format("delta").load(path)
    [earlier] = {
        r.f for r in table.where(~late).select(F.col("_metadata.file_path").alias("f")).collect()
    }
    Path(earlier.removeprefix("file:")).unlink()

    since = T0 + 20 * M
    assert widest_window(table.where(late)) == 5 * M
    bounded = VIEW.serve(reaching(table, since, 5 * M)).where(F.col("burst_at") >= F.lit(since))
    assert bounded.count() == 0  # user 1's purchase at 10:20 is alone
    assert reaching(table, since, 5 * M).count() == 1
    with pytest.raises(Exception, match=r"(?i)not (exist|found)"):
        reaching(table, since).count()
