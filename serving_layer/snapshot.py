"""An in-memory, read-optimized copy of one presented view, indexed for point lookups.

A snapshot holds the presented rows of one version of one view's table, both as typed
Python values (for matching filters) and rendered as JSON-ready dicts (ISO-8601 UTC
timestamps ending in ``Z``, decimals as numbers: the same rendering as ``lk query``).
A hash index on the view's key answers a point query in microseconds; equality filters
on other columns use per-column indexes built on first use. Rows are rendered when a
request first returns them, so a reload costs what indexing the key costs, not what
rendering every value would; a row the snapshot before had rendered, unchanged since,
keeps its rendering, so a reader of the whole view pays for the rows that changed.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from decimal import Decimal, InvalidOperation
from operator import itemgetter
from typing import Any

from pyspark.sql.types import (
    BooleanType,
    ByteType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    ShortType,
    StringType,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from config.errors import LkError
from lake.source import StateTable


class FilterValueError(LkError, ValueError):
    """A filter value cannot be read as its column's type."""


def _parse_bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered in ("true", "1"):
        return True
    if lowered in ("false", "0"):
        return False
    raise ValueError(text)


def _parse_decimal(text: str) -> Decimal:
    value = Decimal(text.strip())
    if not value.is_finite():
        raise ValueError(text)
    return value


def parse_timestamp(text: str) -> datetime:
    """ISO-8601 text (``Z``, an offset, or none meaning UTC) as a naive UTC datetime."""
    value = datetime.fromisoformat(text.strip())
    if value.tzinfo is not None:
        value = value.astimezone(UTC).replace(tzinfo=None)
    return value


_PARSERS: tuple[tuple[tuple[type[DataType], ...], Callable[[str], Any]], ...] = (
    ((ByteType, ShortType, IntegerType, LongType), lambda text: int(text.strip())),
    ((DecimalType,), _parse_decimal),
    ((FloatType, DoubleType), lambda text: float(text.strip())),
    ((StringType,), str),
    ((BooleanType,), _parse_bool),
    ((TimestampType, TimestampNTZType), parse_timestamp),
    ((DateType,), lambda text: date.fromisoformat(text.strip())),
)


def to_json_value(value: Any) -> Any:
    """JSON-ready scalar: ISO-8601 UTC timestamps, decimals as numbers."""
    if isinstance(value, datetime):
        return value.isoformat(timespec="milliseconds") + "Z"
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, bytes | bytearray):
        return value.hex()
    return value


@dataclass(frozen=True)
class ColumnInfo:
    """One presented column: its name, Spark type and the parser of filter values."""

    name: str
    type: str
    parse: Callable[[str], Any] | None

    @classmethod
    def of(cls, name: str, data_type: DataType) -> ColumnInfo:
        """Column info for a Spark field; ``parse`` is None for types that cannot be filtered."""
        parse = next((p for types, p in _PARSERS if isinstance(data_type, types)), None)
        return cls(name, data_type.simpleString(), parse)

    def value(self, text: str) -> Any:
        """Parse a filter value given as text.

        Raises:
            FilterValueError: the column cannot be filtered, or the text is not of its type.
        """
        if self.parse is None:
            raise FilterValueError(f"column {self.name!r} of type {self.type} cannot be filtered")
        try:
            return self.parse(text)
        except (ValueError, InvalidOperation):
            raise FilterValueError(
                f"{text!r} is not a valid {self.type} for column {self.name!r}"
            ) from None


def render(value: Any) -> Any:
    """JSON-ready scalar (see ``lk query``); aware datetimes are shown in UTC."""
    if isinstance(value, datetime) and value.tzinfo is not None:
        value = value.astimezone(UTC).replace(tzinfo=None)
    return to_json_value(value)


def _nulls_first(value: Any) -> tuple[bool, Any]:
    """An order key that puts None before every value, as Spark's ascending order does."""
    return (value is not None, value)


class _Index:
    """Row ids by the values of some columns, ascending; built in C for unique values.

    A view's key names one row, so the key's index holds one id per value, built by one
    ``dict`` over the rows (the first row of a value wins). Only values held by more
    than one row (an index on another column) get a list of the others, in a second pass.
    """

    def __init__(self, rows: Sequence[tuple], positions: Sequence[int]) -> None:
        value: Callable[[tuple], Any] = itemgetter(*positions)
        values = list(map(value, rows))
        # reversed, so that the lowest id of a value is the one that stays
        self._first = dict(zip(reversed(values), range(len(values) - 1, -1, -1), strict=True))
        self._more: dict[Any, list[int]] = {}
        if len(self._first) < len(values):
            for i, v in enumerate(values):
                if self._first[v] != i:
                    self._more.setdefault(v, []).append(i)

    def get(self, value: Any) -> list[int]:
        """The ids of the rows holding ``value`` (none: empty)."""
        first = self._first.get(value)
        if first is None:
            return []
        return [first, *self._more.get(value, ())]


class ViewSnapshot:
    """The presented rows of one table version of one view, in presentation order.

    Attributes:
        name: the view's name.
        key: the view's key columns.
        columns: presented columns, in order.
        table: where the rows were read from (the view's merged state).
        version: the table version the rows were read at.
        refreshed_at: when the rows were loaded, or last confirmed current (UTC, naive).
    """

    def __init__(
        self,
        *,
        name: str,
        key: Sequence[str],
        schema: StructType,
        rows: Sequence[tuple],
        table: StateTable,
        version: int,
        refreshed_at: datetime,
        previous: ViewSnapshot | None = None,
    ) -> None:
        """Index ``rows``; a row equal to one ``previous`` rendered keeps that rendering."""
        self.name = name
        self.key = tuple(key)
        self.columns = tuple(ColumnInfo.of(f.name, f.dataType) for f in schema.fields)
        self.table = table
        self.version = version
        self.refreshed_at = refreshed_at
        self._by_name = {c.name: c for c in self.columns}
        self._positions = {c.name: i for i, c in enumerate(self.columns)}
        self._names = [c.name for c in self.columns]
        self._hold([tuple(row) for row in rows], [None] * len(rows))
        if previous is not None and previous.columns == self.columns:
            self._carry(previous)

    def _hold(self, rows: list[tuple], records: list[dict[str, Any] | None]) -> None:
        """Serve ``rows``, with what was rendered of them, indexed on the key."""
        self._rows = rows
        #: rows rendered as JSON-ready dicts, each the first time a request returns it
        self._records = records
        self._key_index = _Index(self._rows, [self._positions[k] for k in self.key])
        self._column_indexes: dict[str, _Index] = {}
        self._lock = threading.Lock()

    def _carry(self, previous: ViewSnapshot) -> None:
        """Take over what ``previous`` rendered of the rows both hold.

        A lane's commit changes a few of a view's rows; a poller of the whole view would
        otherwise render all of them again after each reload (15,760 rows: 77 ms of a
        request's time at 1,000 ev/s). Rows are compared as their typed values, within
        one column typing, so an equal row renders the same. Rows holding a list, a map
        or binary (a bytearray) cannot be compared so: none is carried.
        """
        try:
            rendered = {
                row: record
                for row, record in zip(previous._rows, previous._records, strict=True)
                if record is not None
            }
            if rendered:
                self._records = [rendered.get(row) for row in self._rows]
        except TypeError:  # an unhashable value
            return

    def __len__(self) -> int:
        return len(self._rows)

    def at(self, version: int, refreshed_at: datetime) -> ViewSnapshot:
        """These rows, confirmed current at ``version`` (nothing was appended to the view).

        The copy shares the rows, their indexes and rendered records: none of them change.
        """
        moved = copy.copy(self)
        moved.version, moved.refreshed_at = version, refreshed_at
        return moved

    def changed(
        self,
        *,
        split_by: Sequence[str],
        touched: set[tuple],
        rows: Sequence[tuple],
        order_by: Sequence[str],
        version: int,
        refreshed_at: datetime,
    ) -> ViewSnapshot:
        """These rows with those of each ``touched`` value of ``split_by`` replaced by ``rows``.

        For a view whose rows of one value of ``split_by`` depend on that value's state
        alone (``View.split_by``): a lane commit touched the values in ``touched``, and
        ``rows`` are all that is presented of them now (a value may have none left). The
        other rows, and what was rendered of them, are kept as they are, so the reload
        collects what the commit changed, not the whole view. Ordered on ``order_by``
        as Spark orders (ascending, nulls first).
        """
        positions = [self._positions[c] for c in split_by]
        kept = [
            (row, record)
            for row, record in zip(self._rows, self._records, strict=True)
            if tuple(row[p] for p in positions) not in touched
        ]
        pairs: list[tuple[tuple, dict[str, Any] | None]] = [
            *kept,
            *((tuple(row), None) for row in rows),
        ]
        order = [self._positions[c] for c in order_by]
        if order:
            try:
                pairs.sort(key=lambda pair: tuple(pair[0][p] for p in order))
            except TypeError:  # a null among them: first, as Spark orders them
                pairs.sort(key=lambda pair: tuple(_nulls_first(pair[0][p]) for p in order))
        snapshot = self.at(version, refreshed_at)
        snapshot._hold([row for row, _ in pairs], [record for _, record in pairs])
        return snapshot

    def column(self, name: str) -> ColumnInfo | None:
        """The presented column called ``name``, or None."""
        return self._by_name.get(name)

    def _column_index(self, name: str) -> _Index:
        index = self._column_indexes.get(name)
        if index is None:
            with self._lock:
                index = self._column_indexes.get(name)
                if index is None:
                    index = _Index(self._rows, [self._positions[name]])
                    self._column_indexes[name] = index
        return index

    def _candidates(self, filters: Mapping[str, Any]) -> tuple[Sequence[int], dict[str, Any]]:
        """Row ids that may match (ascending) and the filters still to check on them."""
        if not filters:
            return range(len(self._rows)), {}
        if all(k in filters for k in self.key):
            probe = (
                filters[self.key[0]] if len(self.key) == 1 else tuple(filters[k] for k in self.key)
            )
            rest = {c: v for c, v in filters.items() if c not in self.key}
            return self._key_index.get(probe), rest
        lists = {c: self._column_index(c).get(v) for c, v in filters.items()}
        best = min(lists, key=lambda c: len(lists[c]))
        return lists[best], {c: v for c, v in filters.items() if c != best}

    def select(self, filters: Mapping[str, Any], limit: int | None = None) -> list[dict[str, Any]]:
        """Rendered rows whose columns equal ``filters`` (typed values), in presentation order.

        Args:
            filters: column name -> value already parsed to the column's type.
            limit: at most this many rows (None: all).

        Returns:
            JSON-ready row dicts.
        """
        ids, rest = self._candidates(filters)
        checks = [(self._positions[c], v) for c, v in rest.items()]
        out: list[dict[str, Any]] = []
        for i in ids:
            if limit is not None and len(out) >= limit:
                break
            row = self._rows[i]
            if all(row[pos] == v for pos, v in checks):
                out.append(self._record(i))
        return out

    def _record(self, i: int) -> dict[str, Any]:
        """Row ``i`` rendered (once: a reload replaces the snapshot, not its rows).

        Rendering every row at load took most of a reload's Python time (100,000 rows of
        six columns: 2.3 of 2.8 s), for rows a point query never returns. Two requests
        rendering the same row at once store equal dicts.
        """
        record = self._records[i]
        if record is None:
            record = dict(zip(self._names, (render(v) for v in self._rows[i]), strict=True))
            self._records[i] = record
        return record
