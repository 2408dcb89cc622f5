"""Readings folded into series: micro-batches and marks once each, lag per reading."""

from __future__ import annotations

import orjson
import pytest

from dashboard.history import History

pytestmark = pytest.mark.unit


def reading(at: float, lag: dict[int, int], batches: list[int], marks: list[float]) -> dict:
    return {
        "label": "lambda",
        "at": at,
        "lanes": [
            {
                "name": "lambda-speed",
                "lag": lag,
                "total_lag": sum(lag.values()),
                "micro_batches": [
                    {"batch_id": b, "finished": at - 10 + b, "seconds": 1.0} for b in batches
                ],
            }
        ],
        "marks": [{"at": m, "kind": "batch run", "label": f"run {m:g}"} for m in marks],
    }


def test_micro_batches_and_marks_are_kept_once_and_lag_once_per_reading() -> None:
    history = History()
    history.add(reading(100.0, {0: 5, 1: 7}, [0, 1], [50.0]))
    history.add(reading(102.0, {0: 0, 1: 3}, [1, 2], [50.0, 101.0]))
    (design,) = history.state()["designs"]
    assert [b["batch_id"] for b in design["micro_batches"]] == [0, 1, 2]
    assert [m["at"] for m in design["marks"]] == [50.0, 101.0]
    assert [r["lanes"]["lambda-speed"]["total"] for r in design["lag_series"]] == [12, 3]
    # partitions are int keys: the page's JSON must carry them
    assert b'"1":3' in orjson.dumps(history.state(), option=orjson.OPT_NON_STR_KEYS)


def test_a_design_never_read_is_listed_with_its_reason() -> None:
    history = History()
    history.failed("kappa", "broker down")
    unread = [{"label": "kappa", "error": "broker down"}]
    assert history.state() == {"designs": [], "unread": unread}
