"""The oracle's record types: raw log records, decoded events and quarantined records."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal


@dataclass(frozen=True, slots=True)
class RawRecord:
    """One record as read from a topic: where it sits in the log plus its raw key and value."""

    partition: int
    offset: int
    key: bytes | None
    value: bytes | None


@dataclass(frozen=True, slots=True)
class Event:
    """A valid event (schema_version 1).

    ``event_time`` is a naive ``datetime`` in UTC with millisecond precision; ``price`` is a
    ``Decimal`` with exactly 2 places (or ``None``); ``partition``/``offset`` locate the copy.
    """

    event_id: str
    event_type: str
    user_id: int
    product_id: int
    quantity: int | None
    price: Decimal | None
    event_time: datetime
    partition: int
    offset: int


@dataclass(frozen=True, slots=True)
class Quarantined:
    """A malformed record kept with its raw bytes and the first failing validation reason."""

    record: RawRecord
    reason: str
