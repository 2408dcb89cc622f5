"""Which events a streaming lane must leave out of a view as late, from the contract alone.

Written from ``docs/semantics.md`` ("Late events"): given the micro-batch boundaries a
lane recorded (offset ranges and the cutoff each ran under), the event-time clock and
every lateness decision follow from the raw log. The platform's own list of late
events is never an input, so an on-time event that the platform wrongly drops shows up
as a difference from the oracle.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from oracle.records import Event


@dataclass(frozen=True)
class MicroBatch:
    """One micro-batch of a lane: ``[start, end)`` per partition and the epoch's cutoff."""

    start: Mapping[int, int]
    end: Mapping[int, int]
    cutoff: Mapping[int, int] = field(default_factory=dict)

    def holds(self, partition: int, offset: int) -> bool:
        """Whether the micro-batch read ``offset`` of ``partition``."""
        return self.start.get(partition, 0) <= offset < self.end.get(partition, 0)


def late_events(
    unique: Iterable[Event],
    batches: Sequence[MicroBatch],
    views: Iterable[str],
    lateness: Callable[[str], timedelta],
) -> dict[str, set[str]]:
    """``view -> event ids`` the lane leaves out as late.

    Args:
        unique: the first copy of each valid event (:func:`oracle.dedup`); a re-send
            carries its original's event time, so it could not move the clock anyway.
        batches: the lane's micro-batches in order.
        views: view names.
        lateness: a view's allowed lateness.
    """
    views = list(views)
    by_batch: dict[int, list[Event]] = {}
    for event in unique:
        index = _batch_of(batches, event)
        if index is not None:
            by_batch.setdefault(index, []).append(event)
    clocks: dict[int, datetime] = {}
    late: dict[str, set[str]] = {view: set() for view in views}
    for index, batch in enumerate(batches):
        events = by_batch.get(index, [])
        clock = min(clocks.values()) if clocks else None
        if clock is not None:
            for event in events:
                if event.offset < batch.cutoff.get(event.partition, 0):
                    continue  # the batch run owns it
                for view in views:
                    if event.event_time < clock - lateness(view):
                        late[view].add(event.event_id)
        for event in events:
            seen = clocks.get(event.partition)
            clocks[event.partition] = max(seen, event.event_time) if seen else event.event_time
    return late


def _batch_of(batches: Sequence[MicroBatch], event: Event) -> int | None:
    for index, batch in enumerate(batches):
        if batch.holds(event.partition, event.offset):
            return index
    return None
