"""Device clock offsets from the three timestamps, and purchases on corrected time.

Written from ``docs/semantics.md`` ("Three timestamps and clock skew"): a device stamps
``event_time`` and ``sent_time`` with its own clock, the log stamps the append time with
its clock. ``sent_time - append_time`` is the device's offset minus the transit delay; the
lower median over a device's events is its estimated offset, and the corrected event time
is ``event_time - offset``.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime, timedelta

from config.settings import ViewSettings
from oracle.records import Event

_EPOCH = datetime(1970, 1, 1)
_MS = timedelta(milliseconds=1)

Row = dict[str, object]


def device_offsets(events: list[Event]) -> dict[int, int]:
    """Each user's clock offset in ms: the lower median of ``sent_time - append_time``.

    Only events carrying both times count; a user with none has no entry (offset 0).
    """
    samples: dict[int, list[int]] = defaultdict(list)
    for event in events:
        if event.sent_time is not None and event.append_time is not None:
            samples[event.user_id].append((event.sent_time - event.append_time) // _MS)
    return {user: sorted(s)[(len(s) - 1) // 2] for user, s in samples.items()}


def purchases_by_minute(
    events: list[Event],
    settings: ViewSettings | None = None,
    offsets: dict[int, int] | None = None,
) -> list[Row]:
    """Purchases per tumbling window of event time, shifted back by each user's offset.

    Args:
        events: valid, de-duplicated events.
        settings: view settings (``tumbling_window``); the defaults when ``None``.
        offsets: ``user -> ms`` to subtract; ``None``: raw device time (no correction).

    Returns:
        Rows ``window_start, window_end, purchases`` sorted by ``window_start``.
    """
    size = (settings or ViewSettings()).tumbling_window // _MS
    counts: dict[int, int] = defaultdict(int)
    for event in events:
        if event.event_type != "purchase":
            continue
        t = (event.event_time - _EPOCH) // _MS - (offsets or {}).get(event.user_id, 0)
        counts[t - t % size] += 1
    return [
        {
            "window_start": _EPOCH + start * _MS,
            "window_end": _EPOCH + (start + size) * _MS,
            "purchases": n,
        }
        for start, n in sorted(counts.items())
    ]


def corrected_purchases(events: list[Event], settings: ViewSettings | None = None) -> list[Row]:
    """The view ``corrected_purchases``: purchases per window of corrected event time."""
    return purchases_by_minute(events, settings, device_offsets(events))


def distance(rows: list[Row], truth: list[Row]) -> int:
    """Purchases filed in the wrong window: half the L1 distance of two window counts."""
    mine = {r["window_start"]: r["purchases"] for r in rows}
    true = {r["window_start"]: r["purchases"] for r in truth}
    total = sum(abs(int(mine.get(w, 0)) - int(true.get(w, 0))) for w in mine.keys() | true)  # type: ignore[call-overload]
    return total // 2
