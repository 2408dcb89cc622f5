"""Users buying in bursts: at least N purchases within any interval (a sliding window).

True sliding semantics, not hops: every interval ``[t - burst_window, t]`` counts, and it
is enough to check those ending at a purchase (a count only grows when a purchase enters
the interval). So a user has a burst at the time ``t`` of one of their purchases when
their purchases in ``[t - burst_window, t]`` (both ends inclusive) number at least
``burst_threshold``.

The state is the purchases themselves (one row per purchase, a set: merged by union),
and the counting happens on presentation over the merged state, so the answer is exact
for any split of the events: a burst whose purchases arrive in two micro-batches, or
straddle a Lambda batch cutoff, is found once both halves are in the state. Each state
row carries the interval and threshold it was computed with (``_window_ms``,
``_threshold``), so presentation needs no settings (a Kappa version keeps its own).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from views.base import View, ViewContext

KEY = ("user_id", "burst_at")
_MS = timedelta(milliseconds=1)


def compute(events: DataFrame, ctx: ViewContext) -> DataFrame:
    """One state row per purchase: who, which, when (and the view's interval, threshold)."""
    settings = ctx.settings
    return events.where(F.col("event_type") == "purchase").select(
        "user_id",
        "event_id",
        F.col("event_time").alias("purchased_at"),
        F.lit(settings.burst_window // _MS).cast("long").alias("_window_ms"),
        F.lit(settings.burst_threshold).alias("_threshold"),
    )


def merge(state: DataFrame) -> DataFrame:
    """A set of purchases: copies of one purchase (the same id) are one row. Exact."""
    return state.groupBy("user_id", "event_id").agg(
        F.max("purchased_at").alias("purchased_at"),
        F.max("_window_ms").alias("_window_ms"),
        F.max("_threshold").alias("_threshold"),
    )


def present(state: DataFrame) -> DataFrame:
    """Per user and purchase time ``t``: the purchases in ``[t - window, t]``, if enough.

    Rows ``user_id, burst_at (= t), window_start (= t - window), purchases``; one row
    per user and time, however many purchases share that time.

    Counted in one ordered pass per user, not by pairing purchases: each interval end
    ``t`` gets two probes among the user's purchases in time order, one at ``t`` (after
    the purchases of that instant) and one at ``t - window`` (before them), and a running
    count of purchases gives ``#(<= t) - #(< t - window)``. Joining every end with every
    purchase of its user cost the square of a user's purchases: a lane's alerts at
    5,000 events/s and 200 users took over 100 s of task time per publish by minute 20
    of a run (docs/benchmarks.md, "Where lk's cores went").
    """
    state = state.where(F.col("user_id").isNotNull() & F.col("purchased_at").isNotNull())
    ends = (
        state.select(
            F.col("user_id"),
            F.col("purchased_at").alias("burst_at"),
            F.col("_window_ms").alias("_w"),
            F.col("_threshold").alias("_n"),
        )
        .dropDuplicates(["user_id", "burst_at"])
        .withColumn("window_start", F.timestamp_millis(F.unix_millis("burst_at") - F.col("_w")))
        .where(F.col("window_start").isNotNull())
    )

    def probes(at: str, order: int) -> DataFrame:
        """Each end once more, at time ``at``, sorting before (0) or after (2) purchases."""
        return ends.select(
            "user_id",
            "burst_at",
            "_n",
            "window_start",
            F.col(at).alias("_at"),
            F.lit(order).alias("_order"),
        )

    purchases = state.select(
        "user_id", F.col("purchased_at").alias("_at"), F.lit(1).alias("_order")
    )
    rows = (
        probes("window_start", 0)
        .unionByName(probes("burst_at", 2))
        .unionByName(purchases, allowMissingColumns=True)
    )
    before = (
        Window.partitionBy("user_id")
        .orderBy("_at", "_order")
        .rowsBetween(Window.unboundedPreceding, Window.currentRow)
    )
    counted = rows.withColumn("_seen", F.sum((F.col("_order") == 1).cast("long")).over(before))
    per_end = (
        counted.where(F.col("_order") != 1)
        .groupBy("user_id", "burst_at")
        .agg(
            F.first("_n").alias("_n"),
            F.first("window_start").alias("window_start"),
            (
                F.max(F.when(F.col("_order") == 2, F.col("_seen")))
                - F.max(F.when(F.col("_order") == 0, F.col("_seen")))
            ).alias("purchases"),
        )
    )
    return per_end.where(F.col("purchases") >= F.col("_n")).select(
        "user_id", "burst_at", "window_start", "purchases"
    )


def reaching(state: DataFrame, since: datetime, widest: timedelta | None = None) -> DataFrame:
    """The state rows that the bursts at or after ``since`` are counted from.

    A burst at ``t`` counts the purchases in ``[t - window, t]``, so presenting these rows
    gives every burst at or after ``since`` exactly as the whole state does (earlier
    bursts may come out short: filter them away). It may be applied before ``merge``: a
    purchase's merged time is the latest of its copies, which is at or after the bound
    exactly when one of the copies is. A reader that knows which bursts can have changed
    (the alerts of a lane) reads this, not the whole history.

    Each row's bound is its own window's, which a table's statistics cannot skip files
    by. ``widest``: no row's window is wider (:func:`widest_window`); the bound it gives,
    ``since - widest``, is one they can, so a read opens only the files of the time
    the bursts reach.
    """
    bound = F.timestamp_millis(F.lit(_millis(since)) - F.col("_window_ms"))
    if widest is not None:
        state = state.where(F.col("purchased_at") >= F.lit(since - widest))
    return state.where(F.col("purchased_at") >= bound)


def widest_window(state: DataFrame) -> timedelta | None:
    """The widest window any row of ``state`` was computed with (None: no rows)."""
    [row] = state.agg(F.max("_window_ms").alias("widest")).collect()
    return None if row.widest is None else row.widest * _MS


def _millis(at: datetime) -> int:
    """A naive UTC time as epoch milliseconds (Spark's session time zone is UTC)."""
    return (at - datetime(1970, 1, 1)) // _MS


VIEW = View(
    window="sliding {burst_window}, at least {burst_threshold} purchases",
    name="purchase_bursts",
    key=KEY,
    settles_with="burst_at",
    compute=compute,
    merge=merge,
    merge_rule=(
        "state is the set of purchases (one row each, union); bursts are counted over the "
        "merged set when read: exact for any split"
    ),
    present=present,
    order_by=KEY,
    non_negative=("purchases",),
    compaction="pack",
)
