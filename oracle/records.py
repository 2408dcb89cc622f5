"""The oracle's record types: raw log records, decoded events and quarantined records."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal


@dataclass(frozen=True, slots=True)
class RawRecord:
    """One record as read from a topic: where it sits in the log, its raw key and value.

    ``timestamp`` is the record's log append time in milliseconds since the Unix epoch
    (Kafka's record timestamp), when known.
    """

    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp: int | None = None


@dataclass(frozen=True, slots=True)
class Event:
    """A valid event (schema_version 1).

    ``event_time`` is a naive ``datetime`` in UTC with millisecond precision; ``price`` is a
    ``Decimal`` with exactly 2 places (or ``None``); ``partition``/``offset`` locate the copy.
    ``sent_time`` is the device's send time (None if absent or malformed) and
    ``append_time`` the log's (the record timestamp), when known. Neither takes part in
    equality: a re-send may differ in ``sent_time`` and still be the same event.
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
    sent_time: datetime | None = field(default=None, compare=False)
    append_time: datetime | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class Quarantined:
    """A malformed record kept with its raw bytes and the first failing validation reason."""

    record: RawRecord
    reason: str
