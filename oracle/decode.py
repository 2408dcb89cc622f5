"""Decoding and validation of the ``events`` topic, and de-duplication by ``event_id``."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from datetime import datetime, timedelta
from decimal import ROUND_HALF_UP, Context, Decimal, InvalidOperation
from typing import Any

from config.errors import LkError
from oracle.records import Event, Quarantined, RawRecord

_EPOCH = datetime(1970, 1, 1)

EVENT_TYPES = frozenset({"page_view", "add_to_cart", "remove_from_cart", "purchase"})
CART_TYPES = frozenset({"add_to_cart", "remove_from_cart", "purchase"})
REQUIRED_FIELDS = ("event_id", "event_type", "user_id", "product_id", "event_time")

_TIME = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})\.([0-9]{3})Z"
)
_CENTS = Decimal("0.01")
_DECIMAL_CONTEXT = Context(prec=60, rounding=ROUND_HALF_UP)
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


class _NotJson(LkError, ValueError):
    """Raised for tokens that are not JSON (``NaN``, ``Infinity``)."""


def _reject_constant(token: str) -> Any:
    raise _NotJson(token)


_DECODER = json.JSONDecoder(parse_float=Decimal, parse_constant=_reject_constant)


def _is_int(value: Any) -> bool:
    """A JSON integer (booleans excluded) that fits a signed 64-bit long."""
    return type(value) is int and _INT64_MIN <= value <= _INT64_MAX


def parse_event_time(text: Any) -> datetime | None:
    """Parse ``YYYY-MM-DDTHH:MM:SS.mmmZ`` to a naive UTC ``datetime``.

    Args:
        text: the JSON value of ``event_time``.

    Returns:
        The time, or ``None`` when the value is not a string in exactly that format or is
        not a real calendar time.
    """
    if type(text) is not str:
        return None
    if _TIME.fullmatch(text) is None:
        return None
    try:  # the regex fixed the layout; this checks the calendar (no Feb 30, no hour 24)
        return datetime.fromisoformat(text[:-1])
    except ValueError:
        return None


def parse_price(value: Any) -> Decimal | None:
    """A JSON number as a ``Decimal`` with 2 places (half-up), or ``None`` if not a number.

    Args:
        value: the JSON value of ``price`` (parsed with ``parse_float=Decimal``).

    Returns:
        The price quantized to cents, or ``None`` for non-numbers (booleans included) and
        values too large to represent.
    """
    if type(value) is int:
        value = Decimal(value)
    elif type(value) is not Decimal:
        return None
    try:
        # plus() under half-up turns -0.00 into 0.00
        return _DECIMAL_CONTEXT.plus(value.quantize(_CENTS, context=_DECIMAL_CONTEXT))
    except InvalidOperation:
        return None


def _parse(record: RawRecord) -> Event | str:
    """The record as an ``Event``, or the first failing reason in the contract's order."""
    value = record.value
    if value is None:
        return "invalid_json"
    try:
        doc = _DECODER.decode(value.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return "invalid_json"
    if type(doc) is not dict:
        return "invalid_json"
    version = doc.get("schema_version")
    if type(version) is not int or version != 1:
        return "unsupported_schema_version"
    for name in REQUIRED_FIELDS:
        field = doc.get(name)
        if field is None or (name == "event_id" and field == ""):
            return f"missing_field:{name}"
    event_type = doc["event_type"]
    if type(event_type) is not str or event_type not in EVENT_TYPES:
        return "unknown_event_type"
    user_id = doc["user_id"]
    if not _is_int(user_id):
        return "invalid_user_id"
    product_id = doc["product_id"]
    if not _is_int(product_id):
        return "invalid_product_id"
    event_time = parse_event_time(doc["event_time"])
    if event_time is None:
        return "invalid_event_time"
    quantity = doc.get("quantity")
    if not _is_int(quantity):
        quantity = None
    if event_type in CART_TYPES and (quantity is None or quantity < 1):
        return "invalid_quantity"
    price = parse_price(doc.get("price"))
    if event_type == "purchase" and (price is None or price < 0):
        return "invalid_price"
    return Event(
        event_id=_event_id(doc["event_id"]),
        event_type=event_type,
        user_id=user_id,
        product_id=product_id,
        quantity=quantity,
        price=price,
        event_time=event_time,
        partition=record.partition,
        offset=record.offset,
        sent_time=parse_event_time(doc.get("sent_time")),
        append_time=(
            None if record.timestamp is None else _EPOCH + timedelta(milliseconds=record.timestamp)
        ),
    )


def _event_id(value: Any) -> str:
    if type(value) is str:
        return value
    if type(value) is Decimal:
        return str(value)
    # A non-string id is kept as its JSON text (what a string-typed JSON reader yields).
    return json.dumps(value, default=str, separators=(",", ":"))


def validate(value: bytes | None) -> str | None:
    """Apply the contract's validation order to one record value.

    Args:
        value: the raw record value (``None`` for a record without a value).

    Returns:
        ``None`` for a valid event, else the first failing reason.
    """
    parsed = _parse(RawRecord(0, 0, None, value))
    return parsed if isinstance(parsed, str) else None


def decode(records: Iterable[RawRecord]) -> tuple[list[Event], list[Quarantined]]:
    """Decode and validate records of the ``events`` topic.

    Args:
        records: raw records in any order.

    Returns:
        ``(events, quarantined)``: the valid events (not de-duplicated) and the malformed
        records with their first failing reason, each in input order.
    """
    events: list[Event] = []
    quarantined: list[Quarantined] = []
    for record in records:
        parsed = _parse(record)
        if isinstance(parsed, str):
            quarantined.append(Quarantined(record, parsed))
        else:
            events.append(parsed)
    return events, quarantined


def dedup(events: Iterable[Event]) -> list[Event]:
    """Keep one copy per ``event_id``: the one at the lowest ``(partition, offset)``.

    Args:
        events: valid events, possibly with re-sends.

    Returns:
        The surviving copies, sorted by ``(partition, offset)``.
    """
    best: dict[str, Event] = {}
    for event in events:
        kept = best.get(event.event_id)
        if kept is None or (event.partition, event.offset) < (kept.partition, kept.offset):
            best[event.event_id] = event
    return sorted(best.values(), key=lambda e: (e.partition, e.offset))
