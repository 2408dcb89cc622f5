"""Checking your own views without the platform's code: events per window, declared totals.

The platform cannot recompute views it did not write. What it can check without its own
code is what ``lk check`` checks, made exact: per view and window, the served events
(the sum of the view's count column) against a plain pandas count of the files
(:mod:`oracle.file_counts`: required fields set, numbers numeric, time parses, each id
once), less the rows your contract's extra rules reject (your SQL, evaluated by Spark on
those rows) and less the events the contract lets a lane leave out as late (decided by
:func:`oracle.late_events` from the raw log and the lane's micro-batch boundaries). A view
that declares ``totals`` has each total checked too (your expression over the same rows).
Every other column (means, extremes) is reported as not checked.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from pathlib import Path
from typing import Any

import orjson
import pandas as pd

import oracle
from compare.own_files import PROBE
from event_log.contract import INTEGRAL, EventContract
from oracle.file_counts import FileEvents, events
from workload.replay import strptime_format, time_parser


@dataclass(frozen=True, slots=True)
class LogEvent:
    """A valid event of the raw log, as :func:`oracle.late_events` reads it."""

    event_id: str
    event_time: datetime
    partition: int
    offset: int


def file_spec(path: Path, contract: EventContract) -> FileEvents:
    """How the plain file count reads ``path`` under ``contract`` (``lk check`` reads it so)."""
    fmt = contract.time_format
    if fmt and fmt not in ("epoch_seconds", "epoch_millis"):
        fmt = strptime_format(fmt)
    numeric = [
        f.name
        for f in contract.fields
        if f.type in (*INTEGRAL, "DOUBLE", "FLOAT") or f.type.startswith("DECIMAL")
    ]
    return FileEvents(
        path=path,
        id_column=contract.id_field,
        time_column=contract.time_field,
        time_format=fmt,
        required=contract.required,
        numeric=[n for n in numeric if n != contract.time_field],
    )


def file_events(
    files: Sequence[Path], contract: EventContract, probes: Sequence[Mapping[str, Any]] = ()
) -> pd.DataFrame:
    """The files' events (plain pandas, each id once, first copy kept) and the probes."""
    frames = [events(file_spec(path, contract)) for path in files]
    if probes:
        parse = time_parser(contract)
        rows = pd.DataFrame([p["row"] for p in probes])
        moments = [_utc(parse(t)) for t in rows[contract.time_field]]
        frames.append(rows.assign(**{contract.time_field: moments}))
    both = pd.concat(frames, ignore_index=True)
    return both.drop_duplicates(contract.id_field, keep="first").reset_index(drop=True)


def _utc(seconds: float | None) -> datetime | None:
    if seconds is None:
        return None
    return datetime.fromtimestamp(seconds, UTC).replace(tzinfo=None)


def log_events(
    records: Iterable[oracle.RawRecord], contract: EventContract
) -> tuple[list[LogEvent], int]:
    """The log's valid events, first copy of each id in log order; and how many were valid.

    Valid as the file count has it (a JSON object, required fields set, numbers numeric,
    time parses);
    the extra rules are not evaluated here (their ids are removed by the caller).
    """
    parse = time_parser(contract)
    numeric = list(file_spec(Path(), contract).numeric)
    valid: list[LogEvent] = []
    for record in sorted(records, key=lambda r: (r.partition, r.offset)):
        try:
            row = orjson.loads(record.value or b"")
        except orjson.JSONDecodeError:
            continue
        if not isinstance(row, dict):
            continue
        if any(row.get(name) in (None, "") for name in contract.required):
            continue
        if not all(_number(row.get(name)) for name in numeric):
            continue
        moment = _utc(parse(row.get(contract.time_field)))
        if moment is None:
            continue
        valid.append(LogEvent(str(row[contract.id_field]), moment, record.partition, record.offset))
    seen: set[str] = set()
    unique = []
    for event in valid:
        if event.event_id not in seen:
            seen.add(event.event_id)
            unique.append(event)
    return unique, len(valid)


def _number(value: Any) -> bool:
    """Absent, or a number (as the file count has it: a numeric column may be empty)."""
    if value is None or value == "" or isinstance(value, int | float):
        return not isinstance(value, bool)
    try:
        float(value)
    except (TypeError, ValueError):
        return False
    return True


def rule_failures(spark: Any, frame: pd.DataFrame, contract: EventContract) -> set[str]:
    """Ids of the rows your contract's extra rules reject (your SQL, run by Spark on them)."""
    if not contract.rules or frame.empty:
        return set()
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType, StructField, StructType

    names = [f.name for f in contract.fields if f.name in frame.columns]
    text = frame[names].astype(object).where(frame[names].notna(), None)
    text = text.map(
        lambda v: (
            None if v is None else (v.isoformat(sep=" ") if isinstance(v, datetime) else str(v))
        )
    )
    schema = StructType([StructField(n, StringType()) for n in names])
    raw = spark.createDataFrame([tuple(r) for r in text.itertuples(index=False)], schema)
    typed = raw.select(
        *[F.col(f.name).cast(f.type).alias(f.name) for f in contract.fields if f.name in names]
    )
    passing = F.lit(True)
    for rule in contract.rules:
        passing = passing & F.coalesce(F.expr(rule.check), F.lit(False))
    failed = typed.where(~passing).select(contract.id_field).collect()
    return {str(r[0]) for r in failed}


def window_shape(rows: Sequence[Mapping[str, Any]]) -> tuple[timedelta, timedelta] | None:
    """``(size, slide)`` of a windowed view, from its served rows (None: not windowed)."""
    if not rows or "window_start" not in rows[0] or "window_end" not in rows[0]:
        return None
    sizes = {r["window_end"] - r["window_start"] for r in rows}
    if len(sizes) != 1:
        return None
    size = sizes.pop()
    starts = sorted({r["window_start"] for r in rows})
    gaps = [b - a for a, b in pairwise(starts) if b > a]
    slide = min(gaps) if gaps and min(gaps) < size else size
    return size, slide


def per_window(times: Iterable[datetime], size: timedelta, slide: timedelta) -> Counter:
    """Events per window start (tumbling when ``slide == size``), as Spark's windows align."""
    out: Counter = Counter()
    epoch = datetime(1970, 1, 1)
    hops = int(size / slide)
    for moment in times:
        last = epoch + ((moment - epoch) // slide) * slide
        for k in range(hops):
            out[last - k * slide] += 1
    return out


def check_view(
    served: Sequence[Mapping[str, Any]],
    count_column: str | None,
    expected: pd.DataFrame,
    contract: EventContract,
    rejected: set[str],
    late: set[str],
    totals: Mapping[str, Any] | None = None,
    key: Sequence[str] = (),
) -> dict[str, Any]:
    """One view's served rows against the files: what was checked, what was not, and how.

    Args:
        served: the view's rows as served.
        count_column: the view's column counting events (None: counts not checked).
        contract: your event contract (its id and time fields).
        expected: :func:`file_events` (the files and the probes).
        rejected: ids your contract's rules reject.
        late: ids the contract lets this view's lane leave out as late.
        totals: declared totals, ``column -> expected value`` over the same rows.
        key: the view's key columns (not values to check).
    """
    columns = sorted({c for row in served for c in row}) if served else []
    checked: list[str] = []
    result: dict[str, Any] = {"rows_served": len(served)}
    unexplained = different = missing = extra = explained = 0
    shape = window_shape(served)
    if count_column and shape and count_column in columns:
        size, slide = shape
        ids, times = expected[contract.id_field], expected[contract.time_field]
        file = per_window(times, size, slide)
        after_rules = per_window(times[~ids.isin(rejected)], size, slide)
        allowed = per_window(times[~ids.isin(rejected | late)], size, slide)
        got: Counter = Counter()
        for row in served:
            got[row["window_start"]] += int(row[count_column] or 0)
        probes = per_window(times[ids.astype(str).str.startswith(PROBE)], size, slide)
        table, off = [], []
        for start in sorted(set(file) | set(got)):
            f, r, a = file.get(start, 0), after_rules.get(start, 0), allowed.get(start, 0)
            g = got.get(start, 0)
            missing += g == 0 and r > 0
            extra += g > 0 and r == 0
            different += g > 0 and r > 0 and g != r
            explained += g != r and g == a
            row = {
                "window_start": start.isoformat(),
                "file": f,
                "of_which_probes": probes.get(start, 0),
                "rules_rejected": f - r,
                "late_by_contract": r - a,
                "served": g,
            }
            table.append(row)
            if g != a:
                unexplained += 1
                off.append(row)
        hops = int(size / slide)
        result["events_per_window"] = {
            "count_column": count_column,
            "window": str(size),
            "slide": str(slide),
            "windows": len(table),
            "file_events": sum(file.values()) // hops,
            "rejected_by_rules": (sum(file.values()) - sum(after_rules.values())) // hops,
            "unexplained_windows": off[:5],
            "per_window": table,
        }
        checked.append(f"events per window ({count_column})")
    elif not count_column:
        result["events_per_window"] = "not checked: no count column named (--count VIEW=COLUMN)"
    else:
        result["events_per_window"] = (
            f"not checked: no {count_column!r} or no window_start/window_end"
        )
    result["totals"] = {}
    for column, want in (totals or {}).items():
        have = sum((row.get(column) or 0) for row in served)
        equal = _same(have, want)
        unexplained += not equal
        result["totals"][column] = {"expected": str(want), "served": str(have), "equal": equal}
        checked.append(f"total of {column}")
    if not totals:
        result["totals"] = "not checked: the view declares no totals"
    result["checked"] = checked
    done = {count_column, "window_start", "window_end", *key, *(totals or {})}
    result["not_checked"] = [c for c in columns if c not in done and c != "status"]
    result.update(
        different=different,
        missing=missing,
        extra=extra,
        explained_by_late_events=explained,
        unexplained=unexplained,
    )
    return result


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        return abs(float(a) - float(b)) <= 1e-6 * max(1.0, abs(float(b)))
    return a == b


def late_ids(
    unique: Sequence[LogEvent],
    batches: Sequence[oracle.MicroBatch],
    views: Sequence[str],
    lateness: Any,
    cutoff: Mapping[int, int] | None,
) -> dict[str, set[str]]:
    """``view -> ids`` the contract lets the serving lane leave out (above the batch cutoff)."""
    late = oracle.late_events(unique, batches, views, lateness)  # type: ignore[arg-type]
    cut = cutoff or {}
    above = {e.event_id for e in unique if e.offset >= cut.get(e.partition, 0)}
    return {view: ids & above for view, ids in late.items()}


def disagreements(
    served: Mapping[str, Mapping[str, list[dict[str, Any]]]],
    keys: Mapping[str, Sequence[str]],
    late_windows: Mapping[str, Mapping[str, Sequence[str]]],
) -> dict[str, Any]:
    """Rows on which two designs' served views differ, and whether late events explain them.

    ``served``: design -> view -> rows (values as text); ``late_windows``: design -> view ->
    window starts (as text) holding events that design's lane counted as late. A differing
    row is explained when its window holds such events in either design.
    """
    out: dict[str, Any] = {}
    da, db = list(served)[:2]
    ra, rb = served[da], served[db]
    for view, key in keys.items():
        left = {tuple(str(r[c]) for c in key): _plain(r) for r in ra.get(view, [])}
        right = {tuple(str(r[c]) for c in key): _plain(r) for r in rb.get(view, [])}
        off = [k for k in set(left) | set(right) if left.get(k) != right.get(k)]
        windows = set(late_windows.get(da, {}).get(view, set())) | set(
            late_windows.get(db, {}).get(view, set())
        )
        where = key.index("window_start") if "window_start" in key else None
        explained = [k for k in off if where is not None and k[where] in windows]
        rounding = [k for k in off if _rounding_only(left.get(k), right.get(k))]
        out[view] = {
            "rows": len(set(left) | set(right)),
            "differing": len(off),
            "explained_by_counted_late_events": len(explained),
            "differing_only_in_the_last_digit": len(rounding),
            "examples": [
                {"key": list(k), da: left.get(k), db: right.get(k)}
                for k in sorted(set(off) - set(explained))[:3] or sorted(off)[:3]
            ],
        }
    return out


def _rounding_only(a: tuple | None, b: tuple | None) -> bool:
    """Whether two rows differ only in numbers one unit apart in their last digit.

    A float sum depends on the order it is added in (a batch run and micro-batches add
    in different orders), so a rounded mean can come out one digit apart.
    """
    if a is None or b is None or [c for c, _ in a] != [c for c, _ in b]:
        return False
    for (_, x), (_, y) in zip(a, b, strict=True):
        if x == y:
            continue
        try:
            digits = max(len(v.partition(".")[2]) for v in (x, y))
            if abs(float(x) - float(y)) > 1.000001 * 10**-digits:
                return False
        except ValueError:
            return False
    return True


def _plain(row: Mapping[str, Any]) -> tuple:
    return tuple((c, str(v)) for c, v in sorted(row.items()) if c != "status")
