"""What the sensors example's views must hold, computed with pandas from the file alone.

Written from the example's README and schema, not from the platform's code: a row counts
when every required field is set, the time parses as ``%Y-%m-%d %H:%M:%S``, the numbers
are numbers and the temperature lies in [-60, 80]; copies of a ``reading_id`` count once.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

REQUIRED = ["reading_id", "sensor_id", "site", "measured_at", "temperature_c"]
FIVE = pd.Timedelta(minutes=5)


def valid_readings(path: Path) -> pd.DataFrame:
    """The rows of the file that are readings, each reading once."""
    raw = pd.read_csv(path, dtype=str, keep_default_na=False)
    raw["line"] = raw.index + 2  # the header is line 1; the example has no multi-line rows
    ok = raw[REQUIRED].ne("").all(axis=1)
    time = pd.to_datetime(raw["measured_at"], format="%Y-%m-%d %H:%M:%S", errors="coerce")
    temperature = pd.to_numeric(raw["temperature_c"], errors="coerce")
    humidity = pd.to_numeric(raw["humidity_pct"].replace("", None), errors="coerce")
    ok &= time.notna() & temperature.notna() & temperature.between(-60, 80)
    ok &= humidity.notna() | raw["humidity_pct"].eq("")
    rows = raw.assign(measured_at=time, temperature_c=temperature)[ok]
    return rows.drop_duplicates("reading_id", keep="first")


def bad_lines(path: Path) -> list[int]:
    """Line numbers of the rows that are not readings (the complement of the above)."""
    raw = pd.read_csv(path, dtype=str, keep_default_na=False)
    good = set(valid_readings(path)["line"])
    dup = raw["reading_id"].duplicated(keep="first") & raw["reading_id"].ne("")
    lines = raw.index + 2
    return sorted(int(n) for n, d in zip(lines, dup, strict=True) if n not in good and not d)


def site_temperature(path: Path) -> list[dict]:
    """Tumbling 5-minute windows per site."""
    rows = valid_readings(path)
    rows = rows.assign(window_start=rows["measured_at"].dt.floor("5min"))
    out = rows.groupby(["window_start", "site"]).agg(
        readings=("temperature_c", "size"),
        total=("temperature_c", "sum"),
        max_temperature_c=("temperature_c", "max"),
    )
    return [
        {
            "window_start": start.to_pydatetime(),
            "window_end": (start + FIVE).to_pydatetime(),
            "site": site,
            "readings": int(r.readings),
            "mean_temperature_c": round(float(r.total) / int(r.readings), 3),
            "max_temperature_c": float(r.max_temperature_c),
        }
        for (start, site), r in out.iterrows()
    ]


def sensor_activity(path: Path) -> list[dict]:
    """Hopping 15-minute windows every 5 minutes per sensor: each reading in three."""
    rows = valid_readings(path)
    pane = rows["measured_at"].dt.floor("5min")
    copies = pd.concat([rows.assign(window_start=pane - k * FIVE) for k in range(3)])
    out = copies.groupby(["window_start", "sensor_id"]).agg(
        readings=("temperature_c", "size"),
        min_temperature_c=("temperature_c", "min"),
        max_temperature_c=("temperature_c", "max"),
    )
    return [
        {
            "window_start": start.to_pydatetime(),
            "window_end": (start + 3 * FIVE).to_pydatetime(),
            "sensor_id": sensor,
            "readings": int(r.readings),
            "min_temperature_c": float(r.min_temperature_c),
            "max_temperature_c": float(r.max_temperature_c),
        }
        for (start, sensor), r in out.iterrows()
    ]


EXPECTED = {"site_temperature": site_temperature, "sensor_activity": sensor_activity}
