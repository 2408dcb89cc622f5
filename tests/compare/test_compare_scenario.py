"""``lk compare`` end to end on the real broker: every metric family, both designs, the oracle.

Long (two small comparisons, each design in a Spark process of its own): marker ``scenario``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from compare.options import CompareOptions
from compare.run import run_compare
from compare.screenshot import screenshot
from config.settings import Settings
from infra import chromium

pytestmark = [pytest.mark.integration, pytest.mark.scenario]

FAMILIES = (
    "correctness",
    "freshness",
    "correctness_over_time",
    "handoff",
    "new_logic",
    "late_data",
    "cost",
    "storage",
    "complexity",
    "alerts",
)


def small(late_fraction: float, floor: bool) -> CompareOptions:
    return CompareOptions(
        events=2_000, rate=50, live_seconds=20, late_fraction=late_fraction, warmup_s=5,
        lateness_values=("30 seconds", "2 minutes", "10 minutes"), floor=floor,
    )  # fmt: skip


@pytest.mark.timeout(3000)
def test_compare_measures_every_family_and_the_verdict_follows_the_numbers(
    kafka_settings: Settings, tmp_path: Path
) -> None:
    on_time = run_compare(kafka_settings, small(0.0, floor=True), tmp_path / "on_time")
    late = run_compare(kafka_settings, small(0.3, floor=False), tmp_path / "late")
    for results in (on_time, late):
        assert results["designs"] == ["lambda", "kappa"]
        for run in results["runs"]:
            assert set(FAMILIES) <= set(run), run["design"]
            for phase in ("end_of_live", "after_change"):
                assert run["correctness"][phase]["unexplained"] == 0, (run["design"], phase)
            resends = run["correctness"]["end_of_live"]["duplicates"]
            assert resends["in_log"] > 0, "the workload re-sends some events"
            assert resends["not_dropped"] == 0 and resends["watermark_drops"] == 0, resends
            assert run["freshness"]["processing_time_s"] is not None
            assert run["cost"]["cpu_seconds"] > 0 and run["cost"]["peak_rss_mib"] > 0
        assert results["sustainable_rate"] == {
            "measured": False,
            "detail": "not measured: run with --sustainable",
        }
        for name in ("results.json", "summary.md", "report.html"):
            assert (tmp_path / ("on_time" if results is on_time else "late") / name).exists()
    # the views floor ran over the same workload: every probe it was sent became visible
    floor = on_time["floor"]
    assert floor["measured"] and floor["freshness_p50_s"]["n"] == 1
    assert floor["probes_never_seen"] == 0
    assert set(floor["times_the_floor"]) == {"lambda", "kappa"}
    assert any(s.startswith("Against the views floor") for s in on_time["headline"])
    assert late["floor"]["measured"] is False
    # no late events: nobody loses any; 30 % late by up to 15 minutes: Kappa's live lane
    # leaves some out at 30 s of allowed lateness, Lambda's batch absorbs them
    quiet = [s for s in on_time["verdict"] if s.startswith("Late data")]
    noisy = [s for s in late["verdict"] if s.startswith("Late data")]
    assert all("neither design lost an event" in s for s in quiet)
    assert quiet != noisy and "kappa excluded" in noisy[0]
    if chromium.executable() is not None:
        found = screenshot(tmp_path / "late" / "report.html", tmp_path / "late.png")
        assert found["plots"] >= 4 and found["drawn"] == found["plots"]
