"""What one view reads in a micro-batch: its events on time, and a join's context.

The context is what makes a stream-stream join meet its partner across a micro-batch or
an epoch's cutoff; its bound in event time is the one per-micro-batch value that stays a
literal in the plans (Delta skips old files on it), rounded down to :data:`CONTEXT_STEP`
so Spark's generated code still changes only every few minutes of event time.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from config.settings import ViewSettings
from lake.offsets import below
from views.base import View
from views.windows import floor_to

#: how far the join context's bound is rounded down: a new literal this often (event time)
CONTEXT_STEP = timedelta(minutes=5)


def view_input(
    view: View,
    events: DataFrame,
    retained: DataFrame | None,
    watermark: datetime | None,
    held: list[DataFrame],
    cutoff: dict[int, int],
    *,
    columns: list[str],
    time: str,
    settings: ViewSettings,
) -> DataFrame:
    """Non-late events for ``view``, plus the context a join view needs.

    ``events`` and ``retained`` carry ``late_for`` (the views each event was late for);
    ``columns`` are the event's fields, ``time`` its event-time field.

    The context (earlier micro-batches, and events the batch layer owns) lets a
    stream-stream join find its partner across a micro-batch or cutoff boundary; it
    reaches back ``context_lookback`` behind the view's watermark. That bound is a
    literal on purpose: on the retained rows it lets Delta skip every file older than
    the look-back. Spark compiles a literal into the code of every stage it reaches
    (a dozen large classes here, then the JIT compiles them again), so the bound is
    rounded down to ``CONTEXT_STEP`` and changes every few minutes of event time
    instead of every micro-batch. Reaching further back changes no result: an earlier
    event older than the exact bound can partner no event of this micro-batch (those
    are at or after the watermark, their partners within the look-back), and what
    earlier events derive among themselves is in the state already, which a join
    view's merge keeps. The view's ``partners`` then keeps only the earlier events
    that can still meet an event of this micro-batch (for ``conversions``: the page
    views its purchases may follow, the purchases its page views may precede), so a
    live lane's join does not grow with everything it retained.

    A context event below the epoch's ``cutoff`` partners whatever the lane once
    decided about its lateness: the batch layer owns it now and counted it, late or
    not, so an event after the cutoff must meet it as the batch run's own events do.
    (A page view the lane had marked late for ``conversions`` before a batch run took
    it over was left out of the context, and the purchase after the cutoff that
    followed it was not counted converted.)

    Those partners are cached for the micro-batch (appended to ``held``, which the
    caller releases after its commit): a join reads its input several times (each
    side of a semi- and an anti-join), and each read would otherwise list the log's
    files and scan every retained file within the look-back again.
    """
    own = events.where(~F.array_contains("late_for", view.name))
    if view.context_lookback is None or retained is None:
        return own.select(*columns)
    context = retained.where(below(cutoff) | ~F.array_contains("late_for", view.name))
    if watermark is not None:
        since = watermark - view.context_lookback(settings)
        context = context.where(F.col(time) >= F.lit(floor_to(since, CONTEXT_STEP)))
    if view.partners is not None:
        context = view.partners(own, context, settings)
    context = context.select(*columns).persist()
    held.append(context)
    return own.select(*columns).unionByName(context)
