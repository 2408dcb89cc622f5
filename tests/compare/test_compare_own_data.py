"""``lk compare`` on your own events and views (the sensors example), real broker, both designs.

The expected events per window are counted here with the csv module over the example's
file (its contract's checks and its one extra rule written out by hand), never by the
platform; the probes the comparison adds are subtracted from what was served, by their
marker.

About 5-9 minutes (both designs, each in a Spark process of its own): marker ``scenario``.
"""

from __future__ import annotations

import csv
from collections import Counter
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from compare.options import CompareOptions
from compare.run import run_compare
from config.settings import Settings, load_settings
from tests.conftest import REPO

pytestmark = [pytest.mark.integration, pytest.mark.scenario]
EXAMPLE = REPO / "examples" / "sensors"
FILE = EXAMPLE / "readings.csv"
FAMILIES = (
    "correctness",
    "freshness",
    "handoff",
    "new_logic",
    "late_data",
    "cost",
    "storage",
    "complexity",
)


def file_counts(size: timedelta, slide: timedelta) -> Counter:
    """Readings per window start: each id once, broken rows and the rule's reject left out."""
    seen, out = set(), Counter()
    with FILE.open(newline="") as source:
        for row in csv.DictReader(source):
            if not all(row.get(c) for c in ("reading_id", "sensor_id", "site", "measured_at")):
                continue
            try:
                moment = datetime.strptime(row["measured_at"], "%Y-%m-%d %H:%M:%S")
                temperature = float(row["temperature_c"])
                if row["humidity_pct"]:
                    float(row["humidity_pct"])
            except (TypeError, ValueError):
                continue
            if not -60 <= temperature <= 80 or row["reading_id"] in seen:
                continue
            seen.add(row["reading_id"])
            last = datetime(1970, 1, 1) + (moment - datetime(1970, 1, 1)) // slide * slide
            for k in range(int(size / slide)):
                out[last - k * slide] += 1
    return out


FIVE, TEN, FIFTEEN = (timedelta(minutes=m) for m in (5, 10, 15))


@pytest.mark.timeout(3000)
def test_compare_runs_both_designs_on_the_sensors_example(
    kafka_settings: Settings, tmp_path: Path
) -> None:
    example = load_settings(EXAMPLE / "lk.yaml")
    settings = kafka_settings.model_copy(
        update={
            "events": example.events.model_copy(update={"schema_file": EXAMPLE / "schema.json"}),
            "views": example.views.model_copy(update={"module": str(EXAMPLE / "views.py")}),
        }
    )
    opts = CompareOptions(
        history=FILE,
        rate=40,
        warmup_s=0,
        change={"site_temperature.window": "10 minutes"},
        counts={"site_temperature": "readings", "sensor_activity": "readings"},
        lateness_values=("1 minute", "1 hour"),
    )
    results = run_compare(settings, opts, tmp_path)

    assert results["data_set"]["name"] == str(FILE)
    assert results["data_set"]["contract"]["id_field"] == "reading_id"
    assert results["data_set"]["views"]["names"] == ["site_temperature", "sensor_activity"]
    assert [r["design"] for r in results["runs"]] == ["lambda", "kappa"]
    shapes = {
        "end_of_live": {"site_temperature": (FIVE, FIVE), "sensor_activity": (FIFTEEN, FIVE)},
        "after_change": {"site_temperature": (TEN, TEN), "sensor_activity": (FIFTEEN, FIVE)},
    }
    for run in results["runs"]:
        assert set(FAMILIES) <= set(run), run["design"]
        assert run["freshness"]["processing_time_s"]["n"] > 0, run["design"]
        assert run["freshness"]["never_seen_unexplained"] == 0, run["design"]
        assert run["handoff"]["counted_twice_or_more"] == run["handoff"]["missed"] == 0
        assert run["new_logic"]["seconds"] > 0
        assert [r["allowed_lateness"] for r in run["late_data"]["live_lane"]] == [
            "1 minute",
            "1 hour",
        ]
        assert run["cost"]["cpu_seconds"] > 0 and run["complexity"]["tables"] > 0
        assert run["log"]["rejected_by_rules"] == 1
        for phase, views in shapes.items():
            check = run["correctness"][phase]
            assert check["unexplained"] == 0, (run["design"], phase, check)
            for view, shape in views.items():
                table = check["views"][view]["events_per_window"]["per_window"]
                served = {
                    datetime.fromisoformat(w["window_start"]): w["served"] - w["of_which_probes"]
                    for w in table
                    if w["served"]
                }
                assert served == dict(file_counts(*shape)), (run["design"], phase, view)
                assert check["views"][view]["totals"]["readings"]["equal"], (phase, view)
                assert "max_temperature_c" in check["views"][view]["not_checked"]
    assert set(results["designs_disagree"][str(opts.seed)]) == {"end_of_live", "after_change"}
    for name in ("results.json", "summary.md", "report.html"):
        assert (tmp_path / name).exists()
