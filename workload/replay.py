"""Replay a file of events (CSV, JSON Lines, Parquet) to the events topic as a stream.

Rows become JSON values (the contract's fields, typed as it says), keyed by the
contract's key field, and go through the same producer as ``lk produce``
(:func:`workload.producer.produce`). By default they are sent in event-time order: the
file is read in runs of ``run_rows`` rows, each sorted and, when there is more than one,
spilled to a temporary file and merged back (``heapq.merge``), so memory stays bounded
whatever the file's size. A row that does not fit the schema (a required field empty, a
number that is not one, a time that does not parse) is still sent, so the decoder
quarantines it with its reason, and it is reported here with its line number: nothing
is dropped. The contract's extra rules (SQL) are checked by the decoder only.
"""

from __future__ import annotations

import csv
import heapq
import math
import os
import pickle
import re
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import orjson

from config.errors import LkError
from event_log.contract import INTEGRAL, EventContract, Field
from workload.ahead import iterate_ahead
from workload.generator import Record

FORMATS = ("csv", "jsonl", "parquet")
MAX_LISTED = 10_000  # misfit line numbers kept (all are counted)
AHEAD_FROM_BYTES = 4 << 20  # files this large are read in a child process
_EPOCH = datetime(1970, 1, 1)
_SPARK_TOKENS = [
    ("yyyy", "%Y"), ("yy", "%y"), ("MM", "%m"), ("dd", "%d"), ("HH", "%H"), ("mm", "%M"),
    ("ss", "%S"), ("SSSSSS", "%f"), ("SSS", "%f"), ("XXX", "%z"), ("XX", "%z"), ("X", "%z"),
    ("Z", "%z"),
]  # fmt: skip


class ReplayError(LkError, ValueError):
    """The file cannot be replayed (unknown format, a column the contract needs is absent)."""

    exit_code = 2


def strptime_format(pattern: str) -> str:
    """The Python ``strptime`` format of a Spark datetime pattern (common tokens).

    Raises:
        ReplayError: a token this translation does not know.
    """
    out, i = [], 0
    while i < len(pattern):
        if pattern[i] == "'":
            end = pattern.index("'", i + 1)
            out.append(pattern[i + 1 : end].replace("%", "%%") or "'")
            i = end + 1
            continue
        for token, directive in _SPARK_TOKENS:
            if pattern.startswith(token, i):
                out.append(directive)
                i += len(token)
                break
        else:
            if pattern[i].isalpha():
                raise ReplayError(f"time_format {pattern!r}: token {pattern[i]!r} not supported")
            out.append(pattern[i].replace("%", "%%"))
            i += 1
    return "".join(out)


def time_parser(contract: EventContract) -> Callable[[Any], float | None]:
    """Event time -> epoch seconds (UTC), None when it does not parse as the contract says."""
    fmt = contract.time_format
    if contract.is_epoch_time:
        scale = 1000.0 if fmt == "epoch_millis" else 1.0

        def epoch(value: Any) -> float | None:
            try:
                number = float(value)
            except (TypeError, ValueError):
                return None
            return number / scale if math.isfinite(number) else None

        return epoch
    pattern = strptime_format(fmt) if fmt else None

    def parse(value: Any) -> float | None:
        if isinstance(value, datetime):
            moment = value
        elif isinstance(value, str):
            try:
                moment = (
                    datetime.strptime(value, pattern) if pattern else datetime.fromisoformat(value)
                )
            except ValueError:
                return None
        else:
            return None
        if moment.tzinfo is not None:
            moment = moment.astimezone(UTC).replace(tzinfo=None)
        return (moment - _EPOCH).total_seconds()

    return parse


_ORDERED = ("yyyy", "MM", "dd", "HH", "mm", "ss", "SSSSSS", "SSS")
_WIDTH = {"yyyy": 4, "MM": 2, "dd": 2, "HH": 2, "mm": 2, "ss": 2, "SSSSSS": 6, "SSS": 3}


def _sortable_regex(pattern: str) -> re.Pattern[str] | None:
    """A regex for ``pattern`` if its text sorts as its time does, else None.

    That holds for fixed-width, zero-padded fields from the year down, in that order,
    with fixed literals between them (``yyyy-MM-dd HH:mm:ss``, ``yyyy-MM-dd'T'HH:mm:ss.SSS'Z'``):
    comparing the strings then compares the times, with no parsing at all.
    """
    parts, tokens, i = [], [], 0
    while i < len(pattern):
        if pattern[i] == "'":
            end = pattern.index("'", i + 1)
            parts.append(re.escape(pattern[i + 1 : end] or "'"))
            i = end + 1
            continue
        token = next((t for t in _ORDERED if pattern.startswith(t, i)), None)
        if token is None:
            if pattern[i].isalpha():
                return None
            parts.append(re.escape(pattern[i]))
            i += 1
            continue
        tokens.append(token)
        parts.append(f"(\\d{{{_WIDTH[token]}}})")
        i += len(token)
    if tokens != list(_ORDERED[: len(tokens)]) and tokens != [*_ORDERED[:6], "SSS"]:
        return None
    if tokens[:3] != ["yyyy", "MM", "dd"]:
        return None
    return re.compile("".join(parts))


class TimeKey:
    """Event time -> a sort key; the invalid key (``missing``) sorts before every time.

    Text times in a sortable pattern (:func:`_sortable_regex`) are their own key, checked
    by a regex and a calendar check (no ``strptime``, which costs ten times more); other
    patterns, ISO-8601 and epoch numbers become epoch seconds.
    """

    def __init__(self, contract: EventContract) -> None:
        fmt = contract.time_format
        regex = None
        if fmt and not contract.is_epoch_time:
            regex = _sortable_regex(fmt)
        self._regex = regex
        self._seconds = time_parser(contract)
        self.missing: Any = "" if regex is not None else -math.inf

    def __call__(self, value: Any) -> Any:
        """The key of ``value``, or ``missing`` when it is not a time of the contract."""
        if self._regex is None:
            seconds = self._seconds(value)
            return self.missing if seconds is None else seconds
        if type(value) is not str:
            return self.missing
        match = self._regex.fullmatch(value)
        if match is None:
            return self.missing
        fields = [int(g) for g in match.groups()[:6]]
        try:
            datetime(*fields)  # type: ignore[arg-type]  # month 13, 30 February
        except (TypeError, ValueError):
            return self.missing
        return value

    def seconds(self, key: Any) -> float | None:
        """Epoch seconds of a valid key (pacing, the summary)."""
        if key == self.missing:
            return None
        return self._seconds(key) if isinstance(key, str) else key


def _format_time(value: datetime | date, contract: EventContract) -> str:
    """A datetime read from Parquet, as text in the contract's format."""
    if isinstance(value, datetime) and value.tzinfo is not None:
        value = value.astimezone(UTC).replace(tzinfo=None)
    if not contract.time_format:
        return value.isoformat()
    text = value.strftime(strptime_format(contract.time_format))
    if "SSS" in contract.time_format and "SSSSSS" not in contract.time_format:
        micro = value.microsecond if isinstance(value, datetime) else 0  # a date: midnight
        text = text.replace(f"{micro:06d}", f"{micro // 1000:03d}", 1)
    return text


#: One row ready to send: (time key, line, Kafka key, value, problem or None). A plain
#: tuple: it sorts by time then line with no key function, and pickles fast when spilled.
Encoded = tuple[Any, int, bytes | None, bytes, str | None]
_STRING, _INTEGER, _NUMBER, _BOOLEAN, _TIME, _EVENT_TIME = range(6)


class RowEncoder:
    """A file row -> the JSON value and key the contract describes.

    A row that does not fit gets the reason why; it is sent anyway (the decoder
    quarantines it).
    """

    def __init__(self, contract: EventContract) -> None:
        self.contract = contract
        self.time_key = TimeKey(contract)
        required = set(contract.required)
        self._plan = [
            (f.name, self._kind(f), f.name in required, f"missing_field:{f.name}")
            for f in contract.fields
        ]
        self._key_field = contract.key_field

    def _kind(self, f: Field) -> int:
        if f.name == self.contract.time_field:
            return _EVENT_TIME
        if f.is_time:
            return _TIME
        if f.type == "STRING":
            return _STRING
        if f.type in INTEGRAL:
            return _INTEGER
        return _BOOLEAN if f.type == "BOOLEAN" else _NUMBER

    def encode(self, line: int, row: dict[str, Any] | None, raw: bytes = b"") -> Encoded:
        """Encode one row (``row`` None: a line that is not a JSON object; sent as is)."""
        time_key = self.time_key
        if row is None:
            return (time_key.missing, line, None, raw, "invalid_json")
        out: dict[str, Any] = {}
        problem = None
        moment = time_key.missing
        for name, kind, required, missing in self._plan:
            value = row.get(name)
            if value is None or value == "":
                if required and problem is None:
                    problem = missing
                out[name] = None
                continue
            if kind == _STRING:
                out[name] = value if type(value) is str else str(value)
                continue
            bad = False
            if kind in (_EVENT_TIME, _TIME):
                if isinstance(value, datetime | date):
                    value = _format_time(value, self.contract)
                if kind == _EVENT_TIME:
                    moment = time_key(value.strip() if type(value) is str else value)
                    bad = moment == time_key.missing
            elif kind == _INTEGER:
                if type(value) is not int:
                    try:
                        number = float(value)
                        bad = not number.is_integer()
                        value = value if bad else int(number)
                    except (TypeError, ValueError, OverflowError):
                        bad = True
            elif kind == _NUMBER:
                if type(value) is not float and type(value) is not int:
                    try:
                        number = float(value)
                        bad = not math.isfinite(number)
                        value = value if bad else number
                    except (TypeError, ValueError):
                        bad = True
            elif type(value) is not bool:
                text = str(value).strip().lower()
                bad = text not in ("true", "false")
                value = value if bad else text == "true"
            out[name] = value
            if bad and problem is None:
                problem = f"invalid_{name}"
        key = None
        if self._key_field is not None and out.get(self._key_field) is not None:
            key = str(out[self._key_field]).encode()
        # a copy: orjson's bytes keep a 4 KiB allocation, which a sorted run would hold
        value = bytes(memoryview(orjson.dumps(out)))
        return (moment, line, key, value, problem)


def file_format(path: Path, given: str | None = None) -> str:
    """``csv``, ``jsonl`` or ``parquet``, from ``given`` or the file's suffix."""
    if given:
        if given not in FORMATS:
            raise ReplayError(f"format {given!r}: use one of {', '.join(FORMATS)}")
        return given
    suffixes = [s.lower() for s in path.suffixes]
    if ".parquet" in suffixes or ".pq" in suffixes:
        return "parquet"
    if ".csv" in suffixes:
        return "csv"
    if {".jsonl", ".ndjson", ".json"} & set(suffixes):
        return "jsonl"
    raise ReplayError(f"{path}: cannot tell the format from the name; pass --format")


def read_rows(path: Path, fmt: str) -> Iterator[tuple[int, dict[str, Any] | None, bytes]]:
    """``(line number, row or None, raw line)`` for every row; streamed, never whole."""
    if fmt == "csv":
        with path.open(newline="", encoding="utf-8") as handle:
            reader = csv.reader(handle)
            header = next(reader, None)
            if header is None:
                return
            header = [h.strip() for h in header]
            width = len(header)
            for values in reader:
                if not values:
                    continue
                if len(values) != width:  # a ragged row: its fields are not where they belong
                    yield reader.line_num, None, ",".join(values).encode()
                    continue
                yield reader.line_num, dict(zip(header, values, strict=True)), b""
    elif fmt == "jsonl":
        with path.open("rb") as handle:
            for number, line in enumerate(handle, 1):
                if not line.strip():
                    continue
                try:
                    row = orjson.loads(line)
                except orjson.JSONDecodeError:
                    row = None
                yield number, row if isinstance(row, dict) else None, line.rstrip(b"\r\n")
    else:
        try:
            import pyarrow.parquet as pq
        except ImportError:
            raise ReplayError(
                "Parquet files need pyarrow: pip install 'lambda-kappa-platform[parquet]'"
            ) from None
        number = 0
        for batch in pq.ParquetFile(path).iter_batches(batch_size=16_384):
            for row in batch.to_pylist():
                number += 1
                yield number, row, b""


def check_columns(path: Path, fmt: str, contract: EventContract, time_column: str) -> None:
    """The file has the time column (CSV header / Parquet schema); JSON Lines: unchecked."""
    columns: list[str] | None = None
    if fmt == "csv":
        with path.open(newline="", encoding="utf-8") as handle:
            columns = [c.strip() for c in next(csv.reader(handle), [])]
    elif fmt == "parquet":
        try:
            import pyarrow.parquet as pq
        except ImportError:
            return
        columns = list(pq.ParquetFile(path).schema_arrow.names)
    if columns is not None and time_column not in columns:
        raise ReplayError(
            f"{path}: no column {time_column!r} (the event time); columns: {', '.join(columns)}"
        )


def _spill(run: list[Encoded], folder: str) -> str:
    run.sort()
    with tempfile.NamedTemporaryFile("wb", dir=folder, delete=False, suffix=".run") as handle:
        for start in range(0, len(run), 4096):
            pickle.dump(run[start : start + 4096], handle, protocol=pickle.HIGHEST_PROTOCOL)
        return handle.name


def _read_run(name: str) -> Iterator[Encoded]:
    with open(name, "rb") as handle:
        while True:
            try:
                yield from pickle.load(handle)
            except EOFError:
                return


def in_time_order(rows: Iterator[Encoded], run_rows: int) -> Iterator[Encoded]:
    """``rows`` sorted by (event time, line): sorted runs spilled to disk, then merged.

    At most ``run_rows`` rows are in memory (plus one 4,096-row chunk per spilled run
    while merging). Rows without a time come first.
    """
    run: list[Encoded] = []
    with tempfile.TemporaryDirectory(prefix="lk-replay-") as folder:
        spilled: list[str] = []
        for encoded in rows:
            run.append(encoded)
            if len(run) >= run_rows:
                spilled.append(_spill(run, folder))
                run = []
        run.sort()
        if not spilled:
            yield from run
            return
        runs = [_read_run(name) for name in spilled]
        yield from heapq.merge(*runs, iter(run))


@dataclass
class ReplayStats:
    """What a replay read: rows, misfits by line, order and event-time range."""

    rows: int = 0
    misfits: int = 0
    misfit_lines: list[tuple[int, str]] = field(default_factory=list)
    out_of_order: int = 0
    first_time: Any = None  # time keys (as the file writes them, or epoch seconds)
    last_time: Any = None

    def take(self, other: ReplayStats) -> None:
        """Adopt what ``other`` counted (a child process's stats)."""
        self.__dict__.update(other.__dict__)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready summary (misfit lines capped at 100 here; all are counted)."""

        def iso(key: Any) -> str | None:
            if key is None or isinstance(key, str):
                return key
            return datetime.fromtimestamp(key, UTC).replace(tzinfo=None).isoformat()

        return {
            "rows": self.rows,
            "rows_not_fitting_schema": self.misfits,
            "misfit_lines": [{"line": n, "problem": p} for n, p in self.misfit_lines[:100]],
            "out_of_order_rows_in_file": self.out_of_order,
            "first_event_time": iso(self.first_time),
            "last_event_time": iso(self.last_time),
        }


def replay_records(
    path: Path,
    contract: EventContract,
    stats: ReplayStats,
    *,
    fmt: str | None = None,
    keep_file_order: bool = False,
    speedup: float | None = None,
    run_rows: int = 200_000,
    renames: dict[str, str] | None = None,
    ahead: bool | None = None,
) -> Iterator[Record]:
    """The records to produce for ``path``, counting into ``stats`` as they are read.

    The format and the time column are checked now; the file is read as the records
    are consumed.

    Args:
        path: the file.
        contract: the event contract the rows are encoded for.
        stats: filled in while the records are consumed (at the end, if ``ahead``).
        fmt: ``csv``, ``jsonl`` or ``parquet`` (default: from the suffix).
        keep_file_order: send in file order instead of event-time order.
        speedup: pace the sends at ``speedup`` times the event-time rate (None: as fast
            as possible).
        run_rows: rows per sorted run (the memory bound).
        renames: file column -> contract field, for files whose names differ.
        ahead: read and encode in a child process, overlapping the sends, as ``lk
            produce`` generates (default: for files of ``AHEAD_FROM_BYTES`` or more on a
            machine with a second core, unless paced).
    """
    kind = file_format(path, fmt)
    renames = {k: v for k, v in (renames or {}).items() if k != v}
    source = {v: k for k, v in renames.items()}
    check_columns(path, kind, contract, source.get(contract.time_field, contract.time_field))
    if ahead is None:
        big = path.stat().st_size >= AHEAD_FROM_BYTES
        ahead = speedup is None and big and (os.cpu_count() or 1) > 1
    if ahead:
        options = (path, contract, kind, keep_file_order, run_rows, renames)
        items = iterate_ahead(_in_child, options, stats.take)
        return (Record("events", key, value, label) for key, value, label in items)
    return _records(path, contract, stats, kind, keep_file_order, speedup, run_rows, renames)


def _in_child(
    path: Path,
    contract: EventContract,
    kind: str,
    keep_file_order: bool,
    run_rows: int,
    renames: dict[str, str],
) -> tuple[Iterator[tuple[bytes | None, bytes | None, str]], Callable[[], ReplayStats]]:
    """The child process's half of an ``ahead`` replay: plain tuples, and the stats."""
    stats = ReplayStats()
    records = _records(path, contract, stats, kind, keep_file_order, None, run_rows, renames)
    return ((r.key, r.value, r.kind) for r in records), lambda: stats


def _records(
    path: Path,
    contract: EventContract,
    stats: ReplayStats,
    kind: str,
    keep_file_order: bool,
    speedup: float | None,
    run_rows: int,
    renames: dict[str, str],
) -> Iterator[Record]:
    encoder = RowEncoder(contract)

    time_key = encoder.time_key
    missing = time_key.missing

    def encoded() -> Iterator[Encoded]:
        latest = first = None
        out_of_order = 0
        try:
            for line, row, raw in read_rows(path, kind):
                if renames and row is not None:
                    row = {renames.get(k, k): v for k, v in row.items()}
                item = encoder.encode(line, row, raw)
                stats.rows += 1
                if item[4] is not None:
                    stats.misfits += 1
                    if len(stats.misfit_lines) < MAX_LISTED:
                        stats.misfit_lines.append((line, item[4]))
                moment = item[0]
                if moment != missing:
                    if latest is None:
                        latest = first = moment
                    elif moment < latest:
                        out_of_order += 1
                        first = min(first, moment)
                    else:
                        latest = moment
                yield item
        finally:
            stats.out_of_order += out_of_order
            stats.first_time, stats.last_time = first, latest

    ordered = encoded() if keep_file_order else in_time_order(encoded(), run_rows)
    started, origin, clock = time.monotonic(), None, None
    for moment, _line, key, value, problem in ordered:
        if speedup and (seconds := time_key.seconds(moment)) is not None:  # None: missing
            clock = seconds if clock is None else max(clock, seconds)
            origin = clock if origin is None else origin
            wait = started + (clock - origin) / speedup - time.monotonic()
            if wait > 0:
                time.sleep(wait)
        yield Record("events", key, value, "misfit" if problem else "event")
