"""Your files in a comparison: the history/live split, the live rows and their probes."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from compare.own_files import live_rows, marker_fields, seconds_for, split_tail
from tests.support.contract import READINGS

pytestmark = pytest.mark.unit
CONTRACT = READINGS
ROWS = [
    "id,site,at,n",
    "a,x,2026-03-02 06:00:00,1",
    "b,y,2026-03-02 06:00:09,2",
    "c,x,2026-03-02 06:00:05,oops",
    "d,y,2026-03-02 06:00:10,4",
    "b,y,2026-03-02 06:00:09,2",
]


def test_split_keeps_the_last_rows_in_file_order_with_the_header(tmp_path: Path) -> None:
    source = tmp_path / "f.csv"
    source.write_text("\n".join(ROWS) + "\n")
    head, tail = split_tail(source, 0.4, tmp_path / "parts")
    assert head.read_text().splitlines() == ROWS[:4]
    assert tail.read_text().splitlines() == [ROWS[0], *ROWS[4:]]


def test_live_rows_keep_file_order_and_add_a_marked_probe_after_every_nth_valid_row(
    tmp_path: Path,
) -> None:
    source = tmp_path / "f.csv"
    source.write_text("\n".join(ROWS) + "\n")
    live = live_rows(source, CONTRACT, probe_every=2, markers=["site"])
    values = [orjson.loads(r.value) for r in live.records]
    assert [v["id"] for v in values] == ["a", "b", "lk-probe-0", "c", "d", "b", "lk-probe-1"]
    probe = live.records[2]
    assert probe.probe == "0" and probe.key == b"lk-probe-0"
    assert values[2] == {
        "id": "lk-probe-0",
        "site": "lk-probe-0",
        "at": "2026-03-02 06:00:09",
        "n": 2.0,
    }
    assert [p["event_id"] for p in live.probes] == ["lk-probe-0", "lk-probe-1"]


def test_markers_are_the_string_fields_views_are_keyed_by() -> None:
    keys = [("window_start", "site"), ("window_start", "id"), ("at",)]
    assert marker_fields(CONTRACT, keys) == ["site"]


def test_the_live_phase_lasts_long_enough_to_send_every_row() -> None:
    for rows, rate in ((690, 40.0), (7, 3.0), (1000, 7.0)):
        assert int(rate * seconds_for(rows, rate)) == rows
