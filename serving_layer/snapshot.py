"""An in-memory, read-optimized copy of one presented view, indexed for point lookups.

A snapshot holds the presented rows of one version of one view's table, both as typed
Python values (for matching filters) and rendered as JSON-ready dicts (ISO-8601 UTC
timestamps ending in ``Z``, decimals as numbers: the same rendering as ``lk query``).
Filters on the leading columns of the view's order are answered by binary search over
the ordered rows; other equality filters use per-column hash indexes (the key's among
them) built on first use, so a reload builds no index. Rows are rendered when a
request first returns them, so a reload costs what indexing the key costs, not what
rendering every value would; a row the snapshot before had rendered, unchanged since,
keeps its rendering, so a reader of the whole view pays for the rows that changed.
"""

from __future__ import annotations

import copy
import threading
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from decimal import Decimal, InvalidOperation
from itertools import takewhile
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


def _order_key(values: Sequence[Any]) -> tuple[tuple[bool, Any], ...]:
    """The key of ``values`` in Spark's ascending order, nulls first."""
    return tuple((v is not None, v) for v in values)


_Search = tuple[Callable[[tuple], Any], Callable[[tuple], Any]]
"""How rows are searched on some columns: a row's key, and the key of those columns' values."""


def _searches(positions: Sequence[int]) -> tuple[_Search, _Search]:
    """Searches on the columns at ``positions``: on their values as they are, then keyed.

    Values compare in C as they are; a null among them cannot be compared so, and the
    second search orders them nulls first.
    """
    as_is = itemgetter(*positions)
    probe: Callable[[tuple], Any] = (lambda value: value[0]) if len(positions) == 1 else tuple
    return (as_is, probe), (lambda row: _order_key([row[p] for p in positions]), _order_key)


_ORDERED_ALIKE = (
    BooleanType,
    ByteType,
    DateType,
    DecimalType,
    IntegerType,
    LongType,
    ShortType,
    StringType,
    TimestampNTZType,
    TimestampType,
)
"""Column types whose Python values compare as Spark orders them (UTF-8 bytes order as
code points do); a float's NaN does not, nor does a struct's or a list's order."""


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
        ordered_on: columns the rows are in ascending order on (nulls first, as Spark
            sorts), as far as their types compare in Python as in Spark.
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
        ordered_on: Sequence[str] = (),
    ) -> None:
        """Hold ``rows``, in ``ordered_on`` order; a row ``previous`` rendered keeps that."""
        self.name = name
        self.key = tuple(key)
        self.columns = tuple(ColumnInfo.of(f.name, f.dataType) for f in schema.fields)
        self.table = table
        self.version = version
        self.refreshed_at = refreshed_at
        self._by_name = {c.name: c for c in self.columns}
        self._positions = {c.name: i for i, c in enumerate(self.columns)}
        self._names = [c.name for c in self.columns]
        types = {f.name: f.dataType for f in schema.fields}
        alike = takewhile(lambda c: isinstance(types.get(c), _ORDERED_ALIKE), ordered_on)
        self.ordered_on = tuple(alike)
        self._hold([tuple(row) for row in rows], [None] * len(rows))
        if previous is not None and previous.columns == self.columns:
            self._carry(previous)

    def _hold(self, rows: list[tuple], records: list[dict[str, Any] | None]) -> None:
        """Serve ``rows``, with what was rendered of them; indexes come on first use."""
        self._rows = rows
        #: rows rendered as JSON-ready dicts, each the first time a request returns it
        self._records = records
        self._indexes: dict[tuple[str, ...], _Index] = {}
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
        fresh = [tuple(row) for row in rows]
        ordered = self.ordered_on == tuple(order_by[: len(self.ordered_on)])
        if ordered and split_by and tuple(split_by) == self.ordered_on[: len(split_by)]:
            kept, records = self._spliced(split_by, touched, fresh, order_by)
        else:
            kept, records = self._sorted(split_by, touched, fresh, order_by)
        snapshot = self.at(version, refreshed_at)
        snapshot.ordered_on = self.ordered_on if ordered else ()
        snapshot._hold(kept, records)
        return snapshot

    def _spliced(
        self,
        split_by: Sequence[str],
        touched: set[tuple],
        rows: list[tuple],
        order_by: Sequence[str],
    ) -> tuple[list[tuple], list[dict[str, Any] | None]]:
        """:meth:`changed` for rows in ``split_by`` order: each touched value's run replaced.

        The rows of one value of ``split_by`` sit side by side, found by binary search:
        the commit's few thousand values cost their own rows and a copy of the others'
        references, where filtering and sorting every row grew with the view (180,000
        rows: 0.21 s of each reload, 0.33 s while Spark's tasks ran beside it).
        """
        split = [self._positions[c] for c in split_by]
        rest = [self._positions[c] for c in order_by[len(split_by) :]]
        runs: dict[tuple, list[tuple]] = {}
        for row in rows:
            runs.setdefault(tuple(row[p] for p in split), []).append(row)
        for run in runs.values():
            run.sort(key=lambda row: _order_key([row[p] for p in rest]))
        values = touched | runs.keys()
        as_is, nulls_first = _searches(split)
        try:
            return self._splice(as_is, values, runs)
        except TypeError:  # a null among the values
            return self._splice(nulls_first, values, runs)

    def _splice(
        self, search: _Search, values: set[tuple], runs: dict[tuple, list[tuple]]
    ) -> tuple[list[tuple], list[dict[str, Any] | None]]:
        """The rows with the run of each of ``values`` replaced by ``runs``' (or none)."""
        row_key, probe_of = search
        out: list[tuple] = []
        records: list[dict[str, Any] | None] = []
        start = 0
        for value in sorted(values, key=probe_of):
            probe = probe_of(value)
            low = bisect_left(self._rows, probe, start, key=row_key)
            out += self._rows[start:low]
            records += self._records[start:low]
            run = runs.get(value, [])
            out += run
            records += [None] * len(run)
            start = bisect_right(self._rows, probe, low, key=row_key)
        out += self._rows[start:]
        records += self._records[start:]
        return out, records

    def _sorted(
        self,
        split_by: Sequence[str],
        touched: set[tuple],
        rows: list[tuple],
        order_by: Sequence[str],
    ) -> tuple[list[tuple], list[dict[str, Any] | None]]:
        """:meth:`changed` by filtering every row and sorting them again."""
        positions = [self._positions[c] for c in split_by]
        pairs: list[tuple[tuple, dict[str, Any] | None]] = [
            (row, record)
            for row, record in zip(self._rows, self._records, strict=True)
            if tuple(row[p] for p in positions) not in touched
        ]
        pairs += [(row, None) for row in rows]
        order = [self._positions[c] for c in order_by]
        if order:
            try:
                pairs.sort(key=lambda pair: tuple(pair[0][p] for p in order))
            except TypeError:  # a null among them: first, as Spark orders them
                pairs.sort(key=lambda pair: tuple(_nulls_first(pair[0][p]) for p in order))
        return [row for row, _ in pairs], [record for _, record in pairs]

    def column(self, name: str) -> ColumnInfo | None:
        """The presented column called ``name``, or None."""
        return self._by_name.get(name)

    def _index(self, names: tuple[str, ...]) -> _Index:
        """The hash index on the columns ``names``, built on first use."""
        index = self._indexes.get(names)
        if index is None:
            with self._lock:
                index = self._indexes.get(names)
                if index is None:
                    index = _Index(self._rows, [self._positions[n] for n in names])
                    self._indexes[names] = index
        return index

    def _run(self, values: Sequence[Any]) -> range:
        """Ids of the rows whose leading :attr:`ordered_on` columns hold ``values``."""
        positions = [self._positions[c] for c in self.ordered_on[: len(values)]]
        as_is, nulls_first = _searches(positions)
        try:
            return self._bounds(as_is, tuple(values))
        except TypeError:  # a null among the values
            return self._bounds(nulls_first, tuple(values))

    def _bounds(self, search: _Search, value: tuple) -> range:
        row_key, probe_of = search
        probe = probe_of(value)
        low = bisect_left(self._rows, probe, key=row_key)
        return range(low, bisect_right(self._rows, probe, low, key=row_key))

    def _candidates(self, filters: Mapping[str, Any]) -> tuple[Sequence[int], dict[str, Any]]:
        """Row ids that may match (ascending) and the filters still to check on them.

        The leading ordered columns the filters name give a run of rows by binary search;
        the key, or else the filtered column with the fewest rows, a hash index.
        """
        if not filters:
            return range(len(self._rows)), {}
        leading: list[str] = []
        for name in self.ordered_on:
            if name not in filters:
                break
            leading.append(name)
        whole_key = all(k in filters for k in self.key)
        if leading and (set(self.key) <= set(leading) or not whole_key):
            rest = {c: v for c, v in filters.items() if c not in leading}
            try:
                return self._run([filters[c] for c in leading]), rest
            except TypeError:  # a value of another type than its column's: no row holds it
                return [], rest
        if whole_key:
            probe = (
                filters[self.key[0]] if len(self.key) == 1 else tuple(filters[k] for k in self.key)
            )
            rest = {c: v for c, v in filters.items() if c not in self.key}
            return self._index(self.key).get(probe), rest
        lists = {c: self._index((c,)).get(v) for c, v in filters.items()}
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
