from __future__ import annotations

from datetime import datetime
from decimal import Decimal

import pytest

from compare.correctness import compare_rows

pytestmark = pytest.mark.unit
KEY = ("window_start", "category")
W1, W2, W3 = (datetime(2026, 11, 1, 0, m) for m in (1, 2, 3))


def row(w: datetime, orders: int, revenue: str, category: str = "toys") -> dict:
    return {"window_start": w, "category": category, "orders": orders, "revenue": Decimal(revenue)}


def test_differences_explained_by_late_events_or_not() -> None:
    full = [row(W1, 2, "10.00"), row(W2, 1, "5.00"), row(W3, 1, "1.00")]
    # the contract leaves one late purchase out of W1 and W3's only purchase
    contract = [row(W1, 1, "4.00"), row(W2, 1, "5.00")]
    served = [row(W1, 1, "4.00"), row(W2, 1, "5.0"), row(W3, 9, "9.00", "books")]
    counts = compare_rows(served, full, contract, KEY)
    assert counts["equal"] == 1  # W2 (5.0 == 5.00)
    assert counts["different"] == 1  # W1
    assert counts["missing"] == 1  # W3 toys
    assert counts["extra"] == 1  # W3 books
    assert counts["explained_by_late_events"] == 2  # W1 and the missing W3 toys
    assert counts["unexplained"] == 1  # W3 books: nobody allowed it
