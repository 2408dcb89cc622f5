"""The catalog table as a reader builds it from the compacted ``catalog`` CDC topic."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable

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


def catalog_state(records: Iterable[RawRecord]) -> dict[int, str]:
    """Replay the catalog topic into ``product_id -> category``.

    Records are applied in ``(partition, offset)`` order: a value upserts the product's
    category, a tombstone (``value is None``) deletes the product. The product id is taken
    from the key (``str(product_id)`` as UTF-8). Records whose key is not an integer, or
    whose value is not a JSON object with a string ``category``, are skipped.

    Args:
        records: raw records of the ``catalog`` topic, in any order.

    Returns:
        The catalog as it stands after the last record.
    """
    state: dict[int, str] = {}
    for record in sorted(records, key=lambda r: (r.partition, r.offset)):
        product_id = _product_id(record.key)
        if product_id is None:
            continue
        if record.value is None:
            state.pop(product_id, None)
            continue
        category = _category(record.value)
        if category is not None:
            state[product_id] = category
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
