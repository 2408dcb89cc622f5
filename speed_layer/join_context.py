"""What a lane keeps of its events for a join: the view's rule, and every late event whole.

Written with each micro-batch into the join's context part of the lane's log, and applied
again to that part at each compaction (:mod:`speed_layer.maintenance`), so the join's
context (:mod:`speed_layer.view_input`) holds what it can still meet, not every event of
its look-back.
"""

from __future__ import annotations

from datetime import datetime

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from config.settings import ViewSettings
from views.base import View


def kept_for_join(
    view: View, events: DataFrame, watermark: datetime | None, settings: ViewSettings
) -> DataFrame:
    """What of ``events`` (retained rows, with ``late_for``) a lane keeps for ``view``'s join.

    The view's ``context_kept`` of the events on time for it, and every event late for
    it, whole: a late event partners only once the batch layer owns it, which its own
    offset decides (:func:`speed_layer.view_input.view_input`), so no late event stands
    in for another.
    ``watermark``: the view's, as the next micro-batch will have it (None: drop none by it).
    """
    if view.context_kept is None:
        raise ValueError(f"view {view.name} keeps every event of its look-back")
    late = F.array_contains("late_for", view.name)
    on_time = view.context_kept(events.where(~late), settings, watermark)
    return on_time.unionByName(events.where(late))
