"""Write ``readings.csv``: four hours of readings from twelve sensors on four sites.

The file is what devices deliver, not what a view should count: about 2% of the
readings are re-sent (same ``reading_id``, up to about 15 minutes later in the file),
about 5% arrive out of order (up to three minutes behind their neighbours), and a
handful of rows are broken
(a time that is not one, an empty id or sensor, a temperature that is not a number or
out of range, a humidity that is not a number, a line cut short). Deterministic:
``python examples/sensors/make_data.py`` writes the same file every time.
"""

from __future__ import annotations

import csv
import random
from datetime import datetime, timedelta
from pathlib import Path

SITES = ("north", "south", "east", "west")
START = datetime(2026, 3, 2, 6, 0, 0)
HEADER = ["reading_id", "sensor_id", "site", "measured_at", "temperature_c", "humidity_pct"]


def readings(rng: random.Random) -> list[list[str]]:
    """Every sensor reads once a minute (with jitter), some go quiet for a while."""
    rows = []
    for s in range(12):
        site, sensor = SITES[s % 4], f"s{s:02d}"
        base = 12 + 4 * (s % 4) + rng.random()
        quiet = range(rng.randrange(60, 180), rng.randrange(190, 230)) if s % 3 == 0 else range(0)
        for minute in range(240):
            if minute in quiet:
                continue
            moment = START + timedelta(minutes=minute, seconds=rng.randrange(0, 60))
            temperature = round(base + 3 * rng.random() + minute / 120, 2)
            humidity = "" if rng.random() < 0.05 else f"{rng.uniform(30, 80):.1f}"
            rows.append(
                [f"{sensor}-{minute:04d}", sensor, site, moment.strftime("%Y-%m-%d %H:%M:%S"),
                 f"{temperature}", humidity]
            )  # fmt: skip
    rows.sort(key=lambda r: r[3])
    return rows


def deliver(rows: list[list[str]], rng: random.Random) -> list[list[str]]:
    """Re-sends, out-of-order arrivals and broken rows, as devices and networks make them."""
    out = list(rows)
    for i in range(len(out) - 1, 0, -1):  # ~5% move up to ~3 minutes (36 rows) later
        if rng.random() < 0.05:
            row = out.pop(i)
            out.insert(min(len(out), i + rng.randrange(5, 36)), row)
    for row in rng.sample(rows, len(rows) // 50):  # ~2% re-sent, a little later
        at = min(len(out), out.index(row) + rng.randrange(1, 200))
        out.insert(at, list(row))
    broken = [
        ["bad-time-1", "s01", "south", "yesterday at noon", "14.2", "40.0"],
        ["", "s02", "east", "2026-", "17.0", "41.0"],
        ["bad-sensor-1", "", "west", "2026-", "19.5", "44.0"],
        ["bad-temp-1", "s05", "south", "2026-", "n/a", "50.0"],
        ["bad-temp-2", "s06", "east", "2026-", "999", "50.0"],
        ["bad-humidity-1", "s07", "west", "2026-", "20.1", "wet"],
        ["bad-time-2", "s08", "north", "2026-03-02T", "13.3", "39.0"],  # ISO, not the format
        ["cut-short-1", "s09", "south"],
    ]
    for k, row in enumerate(broken):
        at = (k + 1) * len(out) // (len(broken) + 1)
        if len(row) > 3 and row[3].startswith("2026-"):  # the time of its neighbour
            iso = row[3].endswith("T")
            row[3] = out[at][3].replace(" ", "T") + "Z" if iso else out[at][3]
        out.insert(at, row)
    return out


FILE = Path(__file__).with_name("readings.csv")


def main(path: Path = FILE) -> None:
    """Write the file."""
    rng = random.Random(14)
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(HEADER)
        writer.writerows(deliver(readings(rng), rng))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
