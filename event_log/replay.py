"""Replay a file of events (CSV, JSON Lines, Parquet) to the events topic as a stream.

Rows become JSON values (the contract's fields, typed as it says), keyed by the
contract's key field, and go through the same producer as ``lk produce``
(:func:`event_log.producer.produce`). By default they are sent in event-time order: the
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
import pickle
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import orjson

from event_log.contract import INTEGRAL, EventContract, Field
from event_log.generator import Record

FORMATS = ("csv", "jsonl", "parquet")
MAX_LISTED = 10_000  # misfit line numbers kept (all are counted)
_EPOCH = datetime(1970, 1, 1)
_SPARK_TOKENS = [
    ("yyyy", "%Y"), ("yy", "%y"), ("MM", "%m"), ("dd", "%d"), ("HH", "%H"), ("mm", "%M"),
    ("ss", "%S"), ("SSSSSS", "%f"), ("SSS", "%f"), ("XXX", "%z"), ("XX", "%z"), ("X", "%z"),
    ("Z", "%z"),
]  # fmt: skip


class ReplayError(ValueError):
    """The file cannot be replayed (unknown format, a column the contract needs is absent)."""


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


def _format_time(value: datetime | date, contract: EventContract) -> str:
    """A datetime read from Parquet, as text in the contract's format."""
    if isinstance(value, datetime) and value.tzinfo is not None:
        value = value.astimezone(UTC).replace(tzinfo=None)
    if not contract.time_format:
        return value.isoformat()
    text = value.strftime(strptime_format(contract.time_format))
    if "SSS" in contract.time_format and "SSSSSS" not in contract.time_format:
        text = text.replace(f"{value.microsecond:06d}", f"{value.microsecond // 1000:03d}", 1)
    return text


@dataclass(frozen=True)
class Encoded:
    """One row ready to send: its time (epoch s, -inf if none), line, key, value, problem."""

    time: float
    line: int
    key: bytes | None
    value: bytes
    problem: str | None


class RowEncoder:
    """A file row -> the JSON value and key the contract describes.

    A row that does not fit gets the reason why; it is sent anyway (the decoder
    quarantines it).
    """

    def __init__(self, contract: EventContract) -> None:
        self.contract = contract
        self.time_of = time_parser(contract)
        self.required = set(contract.required)
        self.fields = contract.fields

    def _convert(self, f: Field, value: Any) -> tuple[Any, str | None]:
        kind = f.type
        if isinstance(value, str) and kind != "STRING":
            value = value.strip()
        if kind == "STRING":
            return value if isinstance(value, str) else str(value), None
        if f.is_time or f.name == self.contract.time_field:
            if isinstance(value, datetime | date):
                value = _format_time(value, self.contract)
            bad = f.name == self.contract.time_field and self.time_of(value) is None
            return value, f"invalid_{f.name}" if bad else None
        try:
            if kind in INTEGRAL:
                if isinstance(value, float) and not value.is_integer():
                    raise ValueError
                return int(value), None
            if kind == "BOOLEAN":
                if isinstance(value, bool):
                    return value, None
                text = str(value).lower()
                if text not in ("true", "false"):
                    raise ValueError
                return text == "true", None
            number = float(value)
            if not math.isfinite(number):
                raise ValueError
            return number, None
        except (TypeError, ValueError):
            return value, f"invalid_{f.name}"

    def encode(self, line: int, row: dict[str, Any] | None, raw: bytes = b"") -> Encoded:
        """Encode one row (``row`` None: a line that is not a JSON object; sent as is)."""
        if row is None:
            return Encoded(-math.inf, line, None, raw, "invalid_json")
        out: dict[str, Any] = {}
        problem = None
        for f in self.fields:
            value = row.get(f.name)
            if value is None or value == "":
                if f.name in self.required and problem is None:
                    problem = f"missing_field:{f.name}"
                out[f.name] = None
                continue
            out[f.name], bad = self._convert(f, value)
            if bad and problem is None:
                problem = bad
        key_field = self.contract.key_field
        key = None
        if key_field is not None and out.get(key_field) is not None:
            key = str(out[key_field]).encode()
        moment = self.time_of(out.get(self.contract.time_field))
        return Encoded(
            -math.inf if moment is None else moment,
            line,
            key,
            orjson.dumps(out, option=orjson.OPT_NON_STR_KEYS),
            problem,
        )


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
    run.sort(key=lambda e: (e.time, e.line))
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
        run.sort(key=lambda e: (e.time, e.line))
        if not spilled:
            yield from run
            return
        runs = [_read_run(name) for name in spilled]
        yield from heapq.merge(*runs, iter(run), key=lambda e: (e.time, e.line))


@dataclass
class ReplayStats:
    """What a replay read: rows, misfits by line, order and event-time range."""

    rows: int = 0
    misfits: int = 0
    misfit_lines: list[tuple[int, str]] = field(default_factory=list)
    out_of_order: int = 0
    first_time: float | None = None
    last_time: float | None = None

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready summary (misfit lines capped at 100 here; all are counted)."""
        iso = lambda t: None if t is None else datetime.fromtimestamp(t, UTC).isoformat()  # noqa: E731
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
) -> Iterator[Record]:
    """The records to produce for ``path``, counting into ``stats`` as they are read.

    Args:
        path: the file.
        contract: the event contract the rows are encoded for.
        stats: filled in while the records are consumed.
        fmt: ``csv``, ``jsonl`` or ``parquet`` (default: from the suffix).
        keep_file_order: send in file order instead of event-time order.
        speedup: pace the sends at ``speedup`` times the event-time rate (None: as fast
            as possible).
        run_rows: rows per sorted run (the memory bound).
        renames: file column -> contract field, for files whose names differ.
    """
    kind = file_format(path, fmt)
    renames = {k: v for k, v in (renames or {}).items() if k != v}
    source = {v: k for k, v in renames.items()}
    check_columns(path, kind, contract, source.get(contract.time_field, contract.time_field))
    encoder = RowEncoder(contract)

    def encoded() -> Iterator[Encoded]:
        latest = -math.inf
        for line, row, raw in read_rows(path, kind):
            if renames and row is not None:
                row = {renames.get(k, k): v for k, v in row.items()}
            item = encoder.encode(line, row, raw)
            stats.rows += 1
            if item.problem is not None:
                stats.misfits += 1
                if len(stats.misfit_lines) < MAX_LISTED:
                    stats.misfit_lines.append((line, item.problem))
            if item.time != -math.inf:
                if item.time < latest:
                    stats.out_of_order += 1
                latest = max(latest, item.time)
                stats.first_time = min(stats.first_time or item.time, item.time)
                stats.last_time = latest
            yield item

    ordered = encoded() if keep_file_order else in_time_order(encoded(), run_rows)
    started, origin, clock = time.monotonic(), None, -math.inf
    for item in ordered:
        if speedup and item.time != -math.inf:
            clock = max(clock, item.time)
            origin = clock if origin is None else origin
            wait = started + (clock - origin) / speedup - time.monotonic()
            if wait > 0:
                time.sleep(wait)
        yield Record("events", item.key, item.value, "misfit" if item.problem else "event")  # type: ignore[arg-type]
