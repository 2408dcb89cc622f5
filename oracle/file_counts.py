"""Events per window, counted straight from a file with pandas: the oracle of your own views.

The platform cannot recompute views it did not write without running their code. What
it can check independently is how many events each window holds: this reads the file
plainly (no Spark, nothing of the platform), keeps the rows whose required columns are
set, whose numeric columns are numbers and whose time parses, counts each id once, and
counts them per window. The contract's extra rules (Spark SQL) are **not** evaluated
here, and neither is lateness (a streaming lane's exclusions): both only remove events,
so a served count above this one is always an error, and one below it is explained
only by those two.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

import pandas as pd


@dataclass(frozen=True)
class FileEvents:
    """How to read a file of events: its columns' roles and the time's ``strptime`` format."""

    path: Path
    id_column: str
    time_column: str
    time_format: str | None = None  # strptime, epoch_seconds or epoch_millis; None: ISO-8601
    required: Sequence[str] = ()
    numeric: Sequence[str] = ()


def _read(path: Path) -> pd.DataFrame:
    suffixes = [s.lower() for s in path.suffixes]
    if ".csv" in suffixes:
        return pd.read_csv(path, dtype=str, keep_default_na=False, on_bad_lines="skip")
    if {".jsonl", ".ndjson", ".json"} & set(suffixes):
        return pd.read_json(path, lines=True, dtype=False)
    return pd.read_parquet(path)


def events(spec: FileEvents) -> pd.DataFrame:
    """The file's rows that are events, each id once, with the time parsed (UTC, naive)."""
    raw = _read(spec.path)
    for column in {spec.id_column, spec.time_column, *spec.required, *spec.numeric}:
        if column not in raw.columns:
            raw[column] = None
    ok = pd.Series(True, index=raw.index)
    for column in {spec.id_column, spec.time_column, *spec.required}:
        ok &= raw[column].notna() & raw[column].astype(str).ne("")
    for column in spec.numeric:
        text = raw[column].astype("string").replace("", pd.NA)
        ok &= text.isna() | pd.to_numeric(text, errors="coerce").notna()
    times = raw[spec.time_column]
    if spec.time_format in ("epoch_seconds", "epoch_millis"):
        unit = "s" if spec.time_format == "epoch_seconds" else "ms"
        numbers = pd.to_numeric(times, errors="coerce")
        parsed = pd.to_datetime(numbers, unit=unit, errors="coerce", utc=True)
    else:
        fmt = spec.time_format or "ISO8601"
        parsed = pd.to_datetime(times, format=fmt, errors="coerce", utc=True)
    ok &= parsed.notna()
    rows = raw.assign(**{spec.time_column: parsed.dt.tz_localize(None)})[ok]
    return rows.drop_duplicates(spec.id_column, keep="first")


def counts_per_window(
    spec: FileEvents, size: timedelta, slide: timedelta | None = None
) -> dict[datetime, int]:
    """Events per window start: tumbling windows of ``size``, or hopping every ``slide``."""
    slide = slide or size
    times = events(spec)[spec.time_column]
    pane = times.dt.floor(pd.Timedelta(slide))
    starts = pd.concat([pane - k * pd.Timedelta(slide) for k in range(int(size / slide))])
    return {start.to_pydatetime(): int(n) for start, n in starts.value_counts().items()}
