"""What a lane keeps of its events for a join: the view's rule, and every late event whole.

Written with each micro-batch into the join's context part of the lane's log, and applied
again to that part at each compaction (:mod:`speed_layer.maintenance`), so the join's
context (:mod:`speed_layer.view_input`) holds what it can still meet, not every event of
its look-back.

What a rule keeps depends on the view settings it ran with (``conversions``: a step as
long as the look-back, purchases behind the lateness dropped), so a part is good only for
the settings it was kept by: each progress row names the part each join reads and the
settings' digest (:class:`ContextPart`), and a lane whose settings differ, or whose log
names none, seeds a part of its own from the retained events.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from config.settings import ViewSettings
from views.base import View


@dataclass(frozen=True)
class ContextPart:
    """Where a join's context is in the lane's log, and the view settings it was kept by.

    Attributes:
        part: the log's ``part`` (:func:`speed_layer.lane_log.context_part`).
        rule: :func:`rule_of` the view settings every micro-batch that wrote it ran with.
    """

    part: str
    rule: str

    def kept_by(self, settings: ViewSettings) -> bool:
        """Whether these are the view settings the part was kept by."""
        return self.rule == rule_of(settings)


def rule_of(settings: ViewSettings) -> str:
    """A digest of the view settings: equal for two lanes whose rules keep the same rows."""
    return hashlib.sha256(settings.model_dump_json().encode()).hexdigest()[:16]


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
