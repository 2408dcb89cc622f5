"""The versioned event and catalog schemas (see docs/semantics.md for the contract)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any, Literal

import orjson

from event_log.contract import MISSING, TYPES, EventContract, Rule, parse_ddl

SCHEMA_VERSION = 1
EventType = Literal["page_view", "add_to_cart", "remove_from_cart", "purchase"]
EVENT_TYPES: tuple[str, ...] = ("page_view", "add_to_cart", "remove_from_cart", "purchase")
CART_TYPES: tuple[str, ...] = ("add_to_cart", "remove_from_cart", "purchase")
REQUIRED_FIELDS: tuple[str, ...] = ("event_id", "event_type", "user_id", "product_id", "event_time")
UNKNOWN_CATEGORY = "unknown"
TIME_FORMAT = "yyyy-MM-dd'T'HH:mm:ss.SSS'Z'"

SHOP_DDL = (
    "event_id STRING NOT NULL, event_type STRING NOT NULL, user_id BIGINT NOT NULL, "
    "product_id BIGINT NOT NULL, quantity INT, price DECIMAL(12,2), event_time TIMESTAMP NOT NULL, "
    "sent_time TIMESTAMP, schema_version INT"
)


def _quoted(values: tuple[str, ...]) -> str:
    return ", ".join(f"'{v}'" for v in values)


#: The online-shop events of docs/semantics.md: the default contract, built like any other.
#: Its extra rules, in this order, give exactly the contract's quarantine reasons.
SHOP = EventContract(
    fields=parse_ddl(SHOP_DDL, "event_log.schema.SHOP_DDL"),
    id_field="event_id",
    time_field="event_time",
    key_field="user_id",
    time_format=TIME_FORMAT,
    rules=(
        Rule("unsupported_schema_version", f"schema_version = {SCHEMA_VERSION}"),
        Rule("unknown_event_type", f"event_type IN ({_quoted(EVENT_TYPES)})"),
        Rule("invalid_quantity", f"event_type NOT IN ({_quoted(CART_TYPES)}) OR quantity >= 1"),
        Rule("invalid_price", "event_type <> 'purchase' OR price >= 0"),
    ),
    order=(
        "unsupported_schema_version",
        MISSING,
        "unknown_event_type",
        TYPES,
        "invalid_quantity",
        "invalid_price",
    ),
    lenient=("quantity", "price", "sent_time", "schema_version"),
    wire_only=("schema_version",),
    source="built-in shop events (docs/semantics.md)",
)


def format_time(moment: datetime) -> str:
    """``2026-11-01T10:00:01.250Z``: UTC, millisecond precision."""
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC).replace(tzinfo=None)
    return moment.isoformat(timespec="milliseconds") + "Z"


def event_fields(
    event_id: str,
    event_type: str,
    user_id: int,
    product_id: int,
    quantity: int | None,
    price: float | None,
    event_time: str,
    sent_time: str | None,
    schema_version: int = SCHEMA_VERSION,
) -> dict[str, Any]:
    """The JSON object of an event, fields in wire order (times already formatted).

    ``Event.to_json`` and the workload generator's fast path both encode through this.
    """
    return {
        "event_id": event_id,
        "event_type": event_type,
        "user_id": user_id,
        "product_id": product_id,
        "quantity": quantity,
        "price": price,
        "event_time": event_time,
        "sent_time": sent_time,
        "schema_version": schema_version,
    }


@dataclass(frozen=True, slots=True)
class Event:
    """One shop event as a device sends it (schema version 1)."""

    event_id: str
    event_type: EventType
    user_id: int
    product_id: int
    quantity: int | None
    price: Decimal | None
    event_time: datetime
    sent_time: datetime | None = None
    schema_version: int = SCHEMA_VERSION

    def to_json(self) -> bytes:
        """The Kafka record value."""
        return orjson.dumps(
            event_fields(
                self.event_id,
                self.event_type,
                self.user_id,
                self.product_id,
                self.quantity,
                float(self.price) if self.price is not None else None,
                format_time(self.event_time),
                format_time(self.sent_time) if self.sent_time else None,
                self.schema_version,
            )
        )

    def key(self) -> bytes:
        """The Kafka record key: the user id, so a user's events stay in one partition."""
        return str(self.user_id).encode()


@dataclass(frozen=True, slots=True)
class Product:
    """One catalog row; the value of a change-data-capture record on ``catalog``."""

    product_id: int
    name: str
    category: str
    price: Decimal
    updated_at: datetime

    def to_json(self) -> bytes:
        """The Kafka record value."""
        return orjson.dumps(self.as_dict())

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready fields."""
        return {
            "product_id": self.product_id,
            "name": self.name,
            "category": self.category,
            "price": float(self.price),
            "updated_at": format_time(self.updated_at),
        }

    def key(self) -> bytes:
        """The Kafka record key: the product id (the compaction key)."""
        return str(self.product_id).encode()
