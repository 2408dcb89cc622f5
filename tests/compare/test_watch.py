"""The watcher's last look: it must begin after the lane caught up, however slow a look is."""

from __future__ import annotations

import time
from datetime import datetime

import pytest

from compare.watch import Watcher

pytestmark = pytest.mark.unit


class SlowServingView:
    """A serving view whose every read takes ``seconds`` and then fails (not served yet)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.reads_began: list[float] = []

    def read(self, spark, view: str):
        self.reads_began.append(time.monotonic())
        time.sleep(self.seconds)
        raise RuntimeError(f"{view} is not served yet")


def test_look_once_more_waits_for_a_look_that_began_after_it_was_asked() -> None:
    view = SlowServingView(seconds=0.4)
    with Watcher(None, view, probe_base=1_000, windows_from=datetime(2026, 1, 1), poll_s=0.01) as w:
        time.sleep(0.1)  # a look is in flight
        asked = time.monotonic()
        w.look_once_more(timeout_s=10)
        assert max(view.reads_began) >= asked
        assert time.monotonic() - asked >= 0.4  # that look had ended, not merely begun
    assert w.seen.errors[0] == "cart_state is not served yet"
