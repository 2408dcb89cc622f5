"""Helpers to build small event and catalog frames for view tests."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal

import pytest
from pyspark.sql import DataFrame, SparkSession

from config.settings import ViewSettings
from event_log.decode import EVENT_SCHEMA
from views.base import ViewContext

T0 = datetime(2026, 11, 1, 10, 0, 0)


def make_events(spark: SparkSession, rows: list[tuple]) -> DataFrame:
    """Rows of ``(event_type, user_id, product_id, quantity, price, event_time)``."""
    full = [
        (
            f"e{i}",
            kind,
            user,
            product,
            qty,
            Decimal(str(price)) if price is not None else None,
            time,
            None,
            0,
            i,
            None,
        )
        for i, (kind, user, product, qty, price, time) in enumerate(rows)
    ]
    return spark.createDataFrame(full, EVENT_SCHEMA)


@pytest.fixture
def events(spark: SparkSession):
    return lambda rows: make_events(spark, rows)


@pytest.fixture
def ctx(spark: SparkSession):
    def build(catalog: dict[int, str] | None = None, **settings) -> ViewContext:
        rows = [(pid, f"P{pid}", cat, Decimal("1.00"), T0) for pid, cat in (catalog or {}).items()]
        frame = spark.createDataFrame(
            rows,
            "product_id long, name string, category string, price decimal(12,2), "
            "updated_at timestamp",
        )
        return ViewContext(ViewSettings(**settings), frame)

    return build
