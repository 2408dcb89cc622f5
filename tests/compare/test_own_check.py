"""Checking your own views against the files: windows, counts, totals, disagreements."""

from __future__ import annotations

from datetime import datetime, timedelta

import pandas as pd
import pytest

from compare.own_check import check_view, disagreements, log_events, per_window, window_shape
from oracle.records import RawRecord
from tests.support.contract import READINGS

pytestmark = pytest.mark.unit
T = datetime(2026, 3, 2, 6, 0)
MIN = timedelta(minutes=1)
CONTRACT = READINGS


def test_per_window_counts_tumbling_and_hopping_windows_as_spark_aligns_them() -> None:
    times = [T + 2 * MIN, T + 7 * MIN, T + 9 * MIN]
    assert per_window(times, 5 * MIN, 5 * MIN) == {T: 1, T + 5 * MIN: 2}
    assert per_window([T + 7 * MIN], 15 * MIN, 5 * MIN) == {
        T - 5 * MIN: 1,
        T: 1,
        T + 5 * MIN: 1,
    }


def test_window_shape_reads_size_and_slide_from_the_served_rows() -> None:
    hopping = [
        {"window_start": T + k * 5 * MIN, "window_end": T + (k * 5 + 15) * MIN} for k in range(3)
    ]
    tumbling = [
        {"window_start": T + k * 5 * MIN, "window_end": T + (k + 1) * 5 * MIN} for k in (0, 1)
    ]
    assert window_shape(hopping) == (15 * MIN, 5 * MIN)
    assert window_shape(tumbling) == (5 * MIN, 5 * MIN)
    assert window_shape([{"site": "a", "readings": 1}]) is None


def frame(*rows: tuple[str, datetime]) -> pd.DataFrame:
    return pd.DataFrame({"id": [r[0] for r in rows], "at": [r[1] for r in rows]})


def served(*counts: tuple[datetime, int]) -> list[dict]:
    return [
        {"window_start": w, "window_end": w + 5 * MIN, "readings": n, "mean": 1.0}
        for w, n in counts
    ]


def test_a_window_short_by_the_contracts_late_and_rejected_events_is_explained() -> None:
    files = frame(("a", T), ("b", T + MIN), ("c", T + 2 * MIN), ("d", T + 6 * MIN))
    result = check_view(
        served((T, 1), (T + 5 * MIN, 1)),
        "readings",
        files,
        CONTRACT,
        rejected={"b"},
        late={"c"},
        totals={"readings": 2},
    )
    assert result["unexplained"] == 0
    assert result["different"] == 1 and result["explained_by_late_events"] == 1
    assert result["totals"]["readings"]["equal"]
    assert result["checked"] == ["events per window (readings)", "total of readings"]
    assert result["not_checked"] == ["mean"]


def test_a_window_above_the_files_count_is_unexplained() -> None:
    files = frame(("a", T), ("b", T + 6 * MIN))
    result = check_view(
        served((T, 2), (T + 5 * MIN, 1)), "readings", files, CONTRACT, set(), set(), None
    )
    assert result["unexplained"] == 1
    assert result["events_per_window"]["unexplained_windows"][0]["served"] == 2
    assert result["totals"] == "not checked: the view declares no totals"


def test_without_a_count_column_the_view_says_its_counts_were_not_checked() -> None:
    result = check_view(served((T, 5)), None, frame(("a", T)), CONTRACT, set(), set(), None)
    assert result["events_per_window"].startswith("not checked")
    assert result["unexplained"] == 0 and result["checked"] == []


def test_log_events_keeps_valid_events_once_in_log_order() -> None:
    def record(offset: int, value: bytes) -> RawRecord:
        return RawRecord(0, offset, None, value)

    events, valid = log_events(
        [
            record(1, b'{"id": "a", "site": "x", "at": "2026-03-02 06:00:00"}'),
            record(0, b'{"id": "a", "site": "x", "at": "2026-03-02 06:00:05"}'),
            record(2, b'{"id": "b", "site": "", "at": "2026-03-02 06:00:00"}'),
            record(3, b'{"id": "c", "site": "x", "at": "yesterday"}'),
            record(4, b"not json"),
        ],
        CONTRACT,
    )
    assert valid == 2
    assert [(e.event_id, e.offset, e.event_time) for e in events] == [
        ("a", 0, T + timedelta(seconds=5))
    ]


def test_disagreements_are_explained_where_a_design_counted_late_events() -> None:
    key = {"v": ["window_start", "site"]}
    lam = {
        "v": [
            {"window_start": "w1", "site": "a", "n": "3"},
            {"window_start": "w2", "site": "a", "n": "1"},
        ]
    }
    kap = {
        "v": [
            {"window_start": "w1", "site": "a", "n": "2"},
            {"window_start": "w2", "site": "a", "n": "2"},
        ]
    }
    found = disagreements(
        {"lambda": lam, "kappa": kap}, key, {"lambda": {}, "kappa": {"v": ["w1"]}}
    )
    assert found["v"]["differing"] == 2
    assert found["v"]["explained_by_counted_late_events"] == 1
    assert found["v"]["examples"][0]["key"] == ["w2", "a"]


def test_a_mean_one_digit_apart_is_told_from_a_real_difference() -> None:
    key = {"v": ["window_start"]}
    lam = {"v": [{"window_start": "w1", "mean": "15.688"}, {"window_start": "w2", "mean": "1.5"}]}
    kap = {"v": [{"window_start": "w1", "mean": "15.689"}, {"window_start": "w2", "mean": "1.7"}]}
    found = disagreements({"lambda": lam, "kappa": kap}, key, {})
    assert found["v"]["differing"] == 2
    assert found["v"]["differing_only_in_the_last_digit"] == 1


def test_log_events_leaves_out_a_number_that_is_not_one() -> None:
    events, valid = log_events(
        [
            RawRecord(
                0, 0, None, b'{"id": "a", "site": "x", "at": "2026-03-02 06:00:00", "n": "x"}'
            ),
            RawRecord(
                0, 1, None, b'{"id": "b", "site": "x", "at": "2026-03-02 06:00:00", "n": ""}'
            ),
            RawRecord(0, 2, None, b'{"id": "c", "site": "x", "at": "2026-03-02 06:00:00", "n": 2}'),
        ],
        CONTRACT,
    )
    assert valid == 2 and [e.event_id for e in events] == ["b", "c"]
