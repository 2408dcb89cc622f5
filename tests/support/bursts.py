"""Purchase records: one at a given time, or a user's at given minutes after ``T0`` (the
``purchase_bursts``, alerts and catalog-join tests)."""

from __future__ import annotations

from datetime import datetime, timedelta
from itertools import count

import orjson

from event_log.schema import event_fields, format_time
from workload.generator import Record

M = timedelta(minutes=1)
T0 = datetime(2026, 11, 1, 10, 0)
_ids = count()


def purchase(
    event_id: str, user: int, at: datetime, product: int = 1, price: float = 1.0
) -> Record:
    """One purchase record of ``user`` at ``at`` (event and sent time alike)."""
    fields = event_fields(
        event_id, "purchase", user, product, 1, price, format_time(at), format_time(at)
    )
    return Record("events", str(user).encode(), orjson.dumps(fields))


def purchases(user: int, *minutes: float) -> list[Record]:
    """One purchase record of ``user`` at each of ``minutes`` after ``T0``."""
    return [purchase(f"b{next(_ids)}", user, T0 + minute * M) for minute in minutes]
