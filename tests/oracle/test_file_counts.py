"""The file oracle for your own views: events per window from a plain read of the file."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from oracle.file_counts import FileEvents, counts_per_window

pytestmark = pytest.mark.unit


def test_counts_per_tumbling_and_hopping_window_each_id_once(tmp_path):
    path = tmp_path / "events.csv"
    path.write_text(
        "id,at,x\n"
        "a,2026-01-01 00:01:00,1\n"
        "a,2026-01-01 00:01:00,1\n"  # a re-send
        "b,2026-01-01 00:06:00,2\n"
        "c,2026-01-01 00:04:59,x\n"  # not a number
        ",2026-01-01 00:02:00,3\n"  # no id
        "d,noon,4\n"  # no time
        "e,2026-01-01 00:11:00,\n"  # x is optional
    )
    spec = FileEvents(path, "id", "at", "%Y-%m-%d %H:%M:%S", required=("x",), numeric=("x",))
    assert counts_per_window(spec, timedelta(minutes=5)) == {
        datetime(2026, 1, 1, 0, 0): 1,
        datetime(2026, 1, 1, 0, 5): 1,
    }
    optional = FileEvents(path, "id", "at", "%Y-%m-%d %H:%M:%S", numeric=("x",))
    hopping = counts_per_window(optional, timedelta(minutes=10), timedelta(minutes=5))
    assert hopping == {
        datetime(2025, 12, 31, 23, 55): 1,
        datetime(2026, 1, 1, 0, 0): 2,
        datetime(2026, 1, 1, 0, 5): 2,
        datetime(2026, 1, 1, 0, 10): 1,
    }
