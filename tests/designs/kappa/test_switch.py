"""The switch moves readers first; the diff after it never undoes or hides the switch.

A unit test of the step's order with its Spark parts replaced: the pointer, the alerts
and the diff themselves are tested against real tables in ``test_kappa.py``.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

from config.settings import load_settings
from designs.kappa import reprocess
from designs.kappa.reprocess import ReprocessPlan, switch

pytestmark = pytest.mark.unit

DIFF = {"revenue_by_category": {"rows_old": 3, "rows_new": 4, "changed": 1}}


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, Any]]:
    """What the switch did, in order (pointer, alerts, diff, file)."""
    done: list[tuple[str, Any]] = []
    monkeypatch.setattr(
        reprocess, "point_to", lambda spark, tables, v, action, note="": done.append(("point", v))
    )
    monkeypatch.setattr(
        reprocess, "publish_alerts", lambda spark, settings, registry: done.append(("alerts", None))
    )
    monkeypatch.setattr(
        reprocess.storage,
        "write_text",
        lambda spark, uri, text: done.append(("file", (uri.rsplit("/", 1)[-1], json.loads(text)))),
    )
    return done


def diff_returning(calls: list, result: dict | Exception):
    def diff(spark, settings, old, new, registry):
        calls.append(("diff", (old, new)))
        if isinstance(result, Exception):
            raise result
        return result

    return diff


def test_readers_move_before_the_diff_is_computed_and_saved(monkeypatch, calls) -> None:
    monkeypatch.setattr(reprocess, "diff_versions", diff_returning(calls, DIFF))
    got = switch(None, load_settings(), ReprocessPlan(3, 2, {0: 10}), None)
    assert got == DIFF
    assert calls == [
        ("point", 3),
        ("alerts", None),
        ("diff", (2, 3)),
        ("file", ("v2_v3.json", DIFF)),
    ]


def test_a_failed_diff_leaves_the_switch_done_and_says_so(monkeypatch, calls, caplog) -> None:
    monkeypatch.setattr(reprocess, "diff_versions", diff_returning(calls, RuntimeError("gone")))
    with caplog.at_level(logging.WARNING, logger=reprocess.__name__):
        got = switch(None, load_settings(), ReprocessPlan(3, 2, {0: 10}), None)
    assert got == {}
    assert calls == [("point", 3), ("alerts", None), ("diff", (2, 3))]
    assert "v3 serves; its diff against v2 was not saved: gone" in caplog.text


def test_the_first_version_has_nothing_to_diff(monkeypatch, calls) -> None:
    monkeypatch.setattr(reprocess, "diff_versions", diff_returning(calls, DIFF))
    got = switch(None, load_settings(), ReprocessPlan(1, None, {0: 10}), None)
    assert got == {}
    assert calls == [("point", 1), ("alerts", None)]
