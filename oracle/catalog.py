"""The catalog table as a reader builds it from the compacted ``catalog`` CDC topic."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal

from oracle.decode import parse_price
from oracle.records import RawRecord

UNKNOWN_CATEGORY = "unknown"
_INTEGER = re.compile(r"-?[0-9]+")


def _product_id(key: bytes | None) -> int | None:
    if key is None:
        return None
    try:
        text = key.decode("utf-8")
    except UnicodeDecodeError:
        return None
    return int(text) if _INTEGER.fullmatch(text) else None


def _category(value: bytes) -> str | None:
    try:
        row = json.loads(value.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    if not isinstance(row, dict):
        return None
    category = row.get("category")
    return category if type(category) is str else None


class CatalogTable(dict[int, str]):
    """``product_id -> category``, plus each product's ``prices`` (None if unreadable)."""

    def __init__(self) -> None:
        super().__init__()
        self.prices: dict[int, Decimal | None] = {}


def _price(value: bytes) -> Decimal | None:
    try:
        row = json.loads(value.decode("utf-8"), parse_float=Decimal)
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    return parse_price(row.get("price")) if isinstance(row, dict) else None


def catalog_state(records: Iterable[RawRecord]) -> CatalogTable:
    """Replay the catalog topic into ``product_id -> category``.

    Records are applied in ``(partition, offset)`` order: a value upserts the product's
    category, a tombstone (``value is None``) deletes the product. The product id is taken
    from the key (``str(product_id)`` as UTF-8). Records whose key is not an integer, or
    whose value is not a JSON object with a string ``category``, are skipped.

    Args:
        records: raw records of the ``catalog`` topic, in any order.

    Returns:
        The catalog as it stands after the last record (with each product's price).
    """
    state = CatalogTable()
    for record in sorted(records, key=lambda r: (r.partition, r.offset)):
        product_id = _product_id(record.key)
        if product_id is None:
            continue
        if record.value is None:
            state.pop(product_id, None)
            state.prices.pop(product_id, None)
            continue
        category = _category(record.value)
        if category is not None:
            state[product_id] = category
            state.prices[product_id] = _price(record.value)
    return state


def category_of(catalog: dict[int, str], product_id: int) -> str:
    """The product's category, or ``unknown`` when the product is not in the catalog.

    Args:
        catalog: ``product_id -> category`` as built by :func:`catalog_state`.
        product_id: the product to look up.

    Returns:
        The category name.
    """
    return catalog.get(product_id, UNKNOWN_CATEGORY)


def _updated_at_ms(value: bytes) -> int | None:
    """The row's ``updated_at`` in ms since the epoch, or None if absent or malformed."""
    try:
        row = json.loads(value.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    text = row.get("updated_at") if isinstance(row, dict) else None
    if type(text) is not str or not _TIME.fullmatch(text):
        return None
    moment = datetime.strptime(text[:-1], "%Y-%m-%dT%H:%M:%S.%f")
    return (moment - datetime(1970, 1, 1)) // timedelta(milliseconds=1)


_TIME = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z")


@dataclass(frozen=True)
class CatalogHistory:
    """Every version of every product, for the join as of an event's time.

    ``versions[product_id]`` is a list of ``(valid_from_ms, partition, offset, category)``
    sorted by that tuple; ``category`` is None for a delete.
    """

    versions: dict[int, list[tuple[int, int, int, str | None]]]

    def category_at(self, product_id: int, moment_ms: int) -> str:
        """The category valid at ``moment_ms``: the newest version from at or before it.

        ``unknown`` when the product had no version yet, or its newest one is a delete.
        """
        category: str | None = None
        for valid_from, _, _, version in self.versions.get(product_id, []):
            if valid_from > moment_ms:
                break
            category = version
        return category or UNKNOWN_CATEGORY


def catalog_history(records: Iterable[RawRecord]) -> CatalogHistory:
    """The catalog topic's changes as versions with the time each became valid.

    An upsert is valid from its ``updated_at``; a delete (a tombstone: no value, so no
    time of its own) from its log append time (``RawRecord.timestamp``). An upsert
    without a readable ``updated_at`` falls back to its append time too. Records skipped
    by :func:`catalog_state` (key not an integer, no string ``category``) are skipped here.

    Args:
        records: raw records of the ``catalog`` topic, in any order.
    """
    versions: dict[int, list[tuple[int, int, int, str | None]]] = {}
    for record in records:
        product_id = _product_id(record.key)
        if product_id is None:
            continue
        if record.value is None:
            category, valid_from = None, record.timestamp
        else:
            category = _category(record.value)
            if category is None:
                continue
            valid_from = _updated_at_ms(record.value)
            if valid_from is None:
                valid_from = record.timestamp
        if valid_from is None:
            raise ValueError(f"catalog record {record.partition}/{record.offset} has no time")
        versions.setdefault(product_id, []).append(
            (valid_from, record.partition, record.offset, category)
        )
    for timeline in versions.values():
        timeline.sort(key=lambda v: v[:3])
    return CatalogHistory(versions)
