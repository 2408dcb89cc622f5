"""``lk replay``'s reading and ordering: bounded sorted runs, line numbers, typed values."""

from __future__ import annotations

import math
import random

import orjson
import pytest

from event_log.contract import EventContract, parse_ddl
from workload.replay import (
    ReplayStats,
    RowEncoder,
    TimeKey,
    in_time_order,
    replay_records,
    strptime_format,
)

pytestmark = pytest.mark.unit
CONTRACT = EventContract(
    fields=parse_ddl("id STRING NOT NULL, n INT, x DOUBLE, at TIMESTAMP NOT NULL, ok BOOLEAN"),
    id_field="id",
    time_field="at",
    key_field="n",
    time_format="yyyy-MM-dd HH:mm:ss",
)


def test_spark_patterns_translate_to_strptime():
    assert strptime_format("yyyy-MM-dd'T'HH:mm:ss.SSS'Z'") == "%Y-%m-%dT%H:%M:%S.%fZ"
    assert strptime_format("dd/MM/yyyy HH:mm") == "%d/%m/%Y %H:%M"


def test_rows_are_typed_keyed_and_misfits_named():
    encoder = RowEncoder(CONTRACT)
    moment, line, key, value, problem = encoder.encode(
        2, {"id": "a", "n": "7", "x": "1.5", "at": "2026-01-01 00:00:10"}
    )
    assert (moment, line, key, problem) == ("2026-01-01 00:00:10", 2, b"7", None)
    assert orjson.loads(value) == {
        "id": "a", "n": 7, "x": 1.5, "at": "2026-01-01 00:00:10", "ok": None,
    }  # fmt: skip
    assert encoder.encode(3, {"id": "", "at": "2026-01-01 00:00:10"})[4] == "missing_field:id"
    bad_number = encoder.encode(4, {"id": "b", "n": "seven", "at": "2026-01-01 00:00:10"})
    assert bad_number[4] == "invalid_n" and orjson.loads(bad_number[3])["n"] == "seven"
    for not_a_time in ("noon", "2026-13-01 00:00:10", "2026-02-30 00:00:10", "2026-01-01"):
        bad_time = encoder.encode(5, {"id": "c", "at": not_a_time})
        assert bad_time[4] == "invalid_at" and bad_time[0] == "", not_a_time
    assert encoder.encode(6, None, b"garbage")[4] == "invalid_json"


def test_times_in_other_patterns_sort_as_epoch_seconds():
    for fmt, text in (("dd/MM/yyyy HH:mm", "02/01/2026 00:00"), (None, "2026-01-02T00:00:00")):
        contract = EventContract(
            fields=parse_ddl("id STRING, at TIMESTAMP"), id_field="id", time_field="at",
            time_format=fmt,
        )  # fmt: skip
        key = TimeKey(contract)
        assert key(text) == pytest.approx(1767312000) and key("x") == -math.inf


def test_sorted_runs_spilled_and_merged_give_event_time_order():
    rng = random.Random(3)
    rows = [(rng.uniform(0, 1e6), line, None, b"", None) for line in range(1, 5_001)]
    rows.append((-math.inf, 5_001, None, b"", "invalid_at"))
    merged = list(in_time_order(iter(rows), run_rows=700))  # eight runs spill to disk
    assert merged == sorted(rows, key=lambda e: (e[0], e[1]))


def test_a_replay_read_ahead_in_a_child_process_sends_the_same(tmp_path):
    path = tmp_path / "events.csv"
    lines = [
        f"e{i},{i % 7},0.5,2026-01-01 00:{(i * 37) % 60:02d}:{i % 60:02d},true" for i in range(3000)
    ]
    path.write_text("id,n,x,at,ok\n" + "\n".join(lines) + "\nbad,1,0.5,never,true\n")
    here, there = ReplayStats(), ReplayStats()
    local = list(replay_records(path, CONTRACT, here, run_rows=500, ahead=False))
    child = list(replay_records(path, CONTRACT, there, run_rows=500, ahead=True))
    assert local == child and len(local) == 3001
    assert here.as_dict() == there.as_dict() and there.misfit_lines == [(3002, "invalid_at")]


def test_csv_and_jsonl_files_report_bad_rows_by_line(tmp_path):
    csv_file = tmp_path / "events.csv"
    csv_file.write_text(
        "id,n,x,at,ok\n"
        "a,1,0.5,2026-01-01 00:00:02,true\n"
        "b,1,0.5,2026-01-01 00:00:01,false\n"
        ",1,0.5,2026-01-01 00:00:03,true\n"
        "d,1\n"
        "e,1,0.5,yesterday,true\n"
    )
    stats = ReplayStats()
    records = list(replay_records(csv_file, CONTRACT, stats))
    assert stats.rows == len(records) == 5
    assert stats.misfit_lines == [(4, "missing_field:id"), (5, "invalid_json"), (6, "invalid_at")]
    sent = [orjson.loads(r.value)["id"] if r.value[:1] == b"{" else r.value for r in records]
    assert sent == [b"d,1", "e", "b", "a", None], "no time first, then event-time order"
    assert stats.out_of_order == 1

    jsonl = tmp_path / "events.jsonl"
    jsonl.write_text('{"id": "a", "at": "2026-01-01 00:00:02"}\n\nnot json\n[1]\n')
    stats = ReplayStats()
    assert len(list(replay_records(jsonl, CONTRACT, stats, keep_file_order=True))) == 3
    assert stats.misfit_lines == [(3, "invalid_json"), (4, "invalid_json")]


def test_a_file_without_the_time_column_is_refused(tmp_path):
    from workload.replay import ReplayError

    csv_file = tmp_path / "events.csv"
    csv_file.write_text("id,when\na,2026-01-01 00:00:02\n")
    with pytest.raises(ReplayError, match="no column 'at'"):
        list(replay_records(csv_file, CONTRACT, ReplayStats()))
    renamed = list(replay_records(csv_file, CONTRACT, ReplayStats(), renames={"when": "at"}))
    assert orjson.loads(renamed[0].value)["at"] == "2026-01-01 00:00:02"


def test_a_parquet_file_replays_with_typed_values_and_row_numbers(tmp_path):
    pa = pytest.importorskip("pyarrow")  # the `parquet` extra; not installed by default
    from datetime import datetime

    import pyarrow.parquet as pq

    path = tmp_path / "events.parquet"
    times = [datetime(2026, 1, 1, 0, 0, 2), None, datetime(2026, 1, 1, 0, 0, 1)]
    pq.write_table(pa.table({"id": ["a", "b", "c"], "n": [1, 2, 3], "at": times}), path)
    stats = ReplayStats()
    records = list(replay_records(path, CONTRACT, stats))
    assert stats.misfit_lines == [(2, "missing_field:at")]
    assert [orjson.loads(r.value)["id"] for r in records] == ["b", "c", "a"]
    assert orjson.loads(records[-1].value)["at"] == "2026-01-01 00:00:02"


def test_a_date_value_takes_a_millisecond_time_format():
    """A Parquet date column (a ``date``, not a ``datetime``) under a format with ``SSS``:
    midnight with zero milliseconds, not an AttributeError on ``microsecond``."""
    from datetime import date

    contract = EventContract(
        fields=parse_ddl("id STRING, at TIMESTAMP"), id_field="id", time_field="at",
        time_format="yyyy-MM-dd HH:mm:ss.SSS",
    )  # fmt: skip
    _, _, _, value, problem = RowEncoder(contract).encode(1, {"id": "a", "at": date(2026, 1, 2)})
    assert problem is None
    assert orjson.loads(value)["at"] == "2026-01-02 00:00:00.000"


def test_a_paced_replay_sends_what_an_unpaced_one_does(tmp_path):
    """``--speedup`` only waits: rows without a valid time are sent unpaced, not refused."""
    csv_file = tmp_path / "events.csv"
    csv_file.write_text(
        "id,n,x,at,ok\n"
        "a,1,0.5,2026-01-01 00:00:01,true\n"
        "b,2,0.5,never,true\n"
        "c,3,0.5,2026-01-01 00:00:02,false\n"
    )
    unpaced = list(replay_records(csv_file, CONTRACT, ReplayStats()))
    paced = list(replay_records(csv_file, CONTRACT, ReplayStats(), speedup=1000.0))
    assert paced == unpaced and [r.kind for r in paced] == ["misfit", "event", "event"]
