"""The watcher: its last look begins after the lane caught up; what a look reads from HTTP."""

from __future__ import annotations

import time
from datetime import datetime

import pytest

from compare.watch import REVENUE, Seen, Watcher, shop_look

pytestmark = pytest.mark.unit


class SlowLook:
    """A look that takes ``seconds`` and then fails (the view is not served yet)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.began: list[float] = []

    def __call__(self, client, seen: Seen) -> None:
        self.began.append(time.monotonic())
        time.sleep(self.seconds)
        raise RuntimeError("GET /views/cart_state: 503 not served yet")


def test_look_once_more_waits_for_a_look_that_began_after_it_was_asked() -> None:
    look = SlowLook(seconds=0.4)
    with Watcher("http://127.0.0.1:9", look, poll_s=0.01) as w:
        time.sleep(0.1)  # a look is in flight
        asked = time.monotonic()
        w.look_once_more(timeout_s=10)
        assert max(look.began) >= asked
        assert time.monotonic() - asked >= 0.4  # that look had ended, not merely begun
    assert w.seen.errors[0] == "GET /views/cart_state: 503 not served yet"


class Answers:
    """A client that answers each view with the rows given, then 'not modified' (None)."""

    def __init__(self, **rows: list[dict]) -> None:
        self._rows = rows

    def rows(self, view: str):
        return self._rows.pop(view, None)


def test_a_look_reads_probes_and_live_windows_as_the_api_renders_them() -> None:
    seen = Seen()
    look = shop_look(probe_base=1_000, windows_from=datetime(2026, 11, 26, 12, 0))
    client = Answers(
        cart_state=[{"user_id": 7}, {"user_id": 1_004}],
        **{
            REVENUE: [
                {"window_start": "2026-11-26T11:59:00.000Z", "category": "toys",
                 "orders": 1, "revenue": 3.0},
                {"window_start": "2026-11-26T12:01:00.000Z", "category": "toys",
                 "orders": 2, "revenue": 12.5},
            ]
        },
    )  # fmt: skip

    look(client, seen)
    look(client, seen)  # nothing changed: the windows seen stay as they were

    assert list(seen.probe_first_seen) == [1_004]
    expected = {(datetime(2026, 11, 26, 12, 1), "toys"): (2, "12.50")}
    assert [windows for _, windows in seen.windows] == [expected, expected]
