"""``lk replay``'s reading and ordering: bounded sorted runs, line numbers, typed values."""

from __future__ import annotations

import math
import random

import orjson
import pytest

from event_log.contract import EventContract, parse_ddl
from event_log.replay import (
    Encoded,
    ReplayStats,
    RowEncoder,
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
    good = encoder.encode(2, {"id": "a", "n": "7", "x": "1.5", "at": "2026-01-01 00:00:10"})
    assert good.problem is None and good.key == b"7" and good.time == pytest.approx(1767225610)
    assert orjson.loads(good.value) == {
        "id": "a", "n": 7, "x": 1.5, "at": "2026-01-01 00:00:10", "ok": None,
    }  # fmt: skip
    assert encoder.encode(3, {"id": "", "at": "2026-01-01 00:00:10"}).problem == (
        "missing_field:id"
    )
    bad_number = encoder.encode(4, {"id": "b", "n": "seven", "at": "2026-01-01 00:00:10"})
    assert bad_number.problem == "invalid_n" and orjson.loads(bad_number.value)["n"] == "seven"
    bad_time = encoder.encode(5, {"id": "c", "at": "noon"})
    assert bad_time.problem == "invalid_at" and bad_time.time == -math.inf
    assert encoder.encode(6, None, b"garbage").problem == "invalid_json"


def test_sorted_runs_spilled_and_merged_give_event_time_order():
    rng = random.Random(3)
    rows = [Encoded(rng.uniform(0, 1e6), line, None, b"", None) for line in range(1, 5_001)]
    rows.append(Encoded(-math.inf, 5_001, None, b"", "invalid_at"))
    merged = list(in_time_order(iter(rows), run_rows=700))  # eight runs spill to disk
    assert merged == sorted(rows, key=lambda e: (e.time, e.line))


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
    from event_log.replay import ReplayError

    csv_file = tmp_path / "events.csv"
    csv_file.write_text("id,when\na,2026-01-01 00:00:02\n")
    with pytest.raises(ReplayError, match="no column 'at'"):
        list(replay_records(csv_file, CONTRACT, ReplayStats()))
    renamed = list(replay_records(csv_file, CONTRACT, ReplayStats(), renames={"when": "at"}))
    assert orjson.loads(renamed[0].value)["at"] == "2026-01-01 00:00:02"
