"""Rows served against the oracle's: equal, different, missing, extra, and why.

A row that differs from the oracle over the whole log is *explained* when it equals what
the contract lets the design serve (the oracle without the events the lane counted as
late); otherwise it is *unexplained*: a bug, whatever the design.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from decimal import Decimal
from typing import Any

#: Approximate columns (HLL sketches) are not compared exactly.
SKIP = frozenset({"distinct_users_approx"})


def _norm(value: Any) -> Any:
    if isinstance(value, Decimal):
        return str(value.quantize(Decimal("0.01")))
    if isinstance(value, float):
        return round(value, 6)
    if isinstance(value, datetime):
        return value.replace(tzinfo=None).isoformat()
    if isinstance(value, list | tuple | set | frozenset):
        return tuple(sorted(str(v) for v in value))
    return value


def keyed(rows: Iterable[dict], key: Sequence[str]) -> dict[tuple, tuple]:
    """``key values -> normalised other values`` (approximate columns left out)."""
    out: dict[tuple, tuple] = {}
    for row in rows:
        k = tuple(_norm(row[c]) for c in key)
        out[k] = tuple((c, _norm(v)) for c, v in sorted(row.items()) if c not in SKIP)
    return out


def compare_rows(
    served: Iterable[dict],
    full: Iterable[dict],
    contract: Iterable[dict],
    key: Sequence[str],
) -> dict[str, Any]:
    """Counts of equal/different/missing/extra rows against ``full``; explained or not."""
    got, want, allowed = keyed(served, key), keyed(full, key), keyed(contract, key)
    counts: dict[str, Any] = {"rows_served": len(got), "rows_oracle": len(want)}
    counts["equal"] = sum(1 for k, v in got.items() if want.get(k) == v)
    counts["different"] = sum(1 for k, v in got.items() if k in want and want[k] != v)
    counts["missing"] = sum(1 for k in want if k not in got)
    counts["extra"] = sum(1 for k in got if k not in want)
    off = [k for k in set(got) | set(want) if got.get(k) != want.get(k)]
    unexplained = [k for k in off if got.get(k) != allowed.get(k)]
    counts["explained_by_late_events"] = len(off) - len(unexplained)
    counts["unexplained"] = len(unexplained)
    counts["unexplained_examples"] = [
        {"key": [str(x) for x in k], "served": _show(got.get(k)), "oracle": _show(want.get(k))}
        for k in unexplained[:3]
    ]
    return counts


def _show(values: tuple | None) -> dict[str, Any] | None:
    return None if values is None else {c: str(v) for c, v in values}
