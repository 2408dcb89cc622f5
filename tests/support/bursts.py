"""Purchases at given minutes after ``T0``, for the ``purchase_bursts`` and alerts tests."""

from __future__ import annotations

from datetime import datetime, timedelta
from itertools import count

import orjson

from event_log.schema import event_fields, format_time
from workload.generator import Record

M = timedelta(minutes=1)
T0 = datetime(2026, 11, 1, 10, 0)
_ids = count()


def purchases(user: int, *minutes: float) -> list[Record]:
    """One purchase record of ``user`` at each of ``minutes`` (event and sent time alike)."""
    return [
        Record(
            "events",
            str(user).encode(),
            orjson.dumps(
                event_fields(
                    f"b{next(_ids)}",
                    "purchase",
                    user,
                    1,
                    1,
                    1.0,
                    format_time(T0 + minute * M),
                    format_time(T0 + minute * M),
                )
            ),
        )
        for minute in minutes
    ]
