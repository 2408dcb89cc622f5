"""The report from literal figures: self-contained, and its plots render in headless Chromium."""

from __future__ import annotations

from pathlib import Path

import pytest

from compare.report import write_reports
from compare.screenshot import screenshot
from compare.verdict import verdict


def stat(value: float) -> dict:
    return {"median": value, "min": value, "max": value, "n": 1}


def run(design: str, latency: float, excluded: int) -> dict:
    start = 1_795_000_000.0
    return {
        "design": design,
        "seed": 1,
        "freshness": {"timeline": [[start + i, latency + i % 3, latency + 1] for i in range(20)]},
        "correctness_over_time": {
            "per_window": [
                {"window": ["w", "toys"], "start": start + 60 * i, "first": start + 60 * i + 70,
                 "correct": start + 60 * i + 90}
                for i in range(5)
            ]
        },
        "correctness": {
            phase: {"views": {"cart_state": {"rows_oracle": 10, "equal": 10 - excluded // 10,
                    "different": excluded // 10, "missing": 0, "extra": 0,
                    "explained_by_late_events": excluded // 10, "unexplained": 0}}}
            for phase in ("end_of_live", "after_change")
        },
        "late_data": {"live_lane": [{"allowed_lateness": "1 minute", "late_in_streaming": excluded,
                                     "absorbed_later": 0, "excluded_for_good": excluded}]},
    }  # fmt: skip


def results() -> dict:
    table = [
        {"metric": "time to serve new logic", "unit": "s", "lower_is_better": True,
         "lambda": stat(120.0), "kappa": stat(45.0)},
        {"metric": "CPU per million records", "unit": "CPU-s", "lower_is_better": True,
         "lambda": stat(9000.0), "kappa": stat(5000.0)},
    ]  # fmt: skip
    late = {
        d: [{"allowed_lateness": "1 minute", "late_in_streaming": n, "absorbed_later": a,
             "excluded_for_good": n - a, "unique_events": 10_000}]
        for d, n, a in (("lambda", 30, 30), ("kappa", 30, 0))
    }  # fmt: skip
    out = {
        "machine": {"cpu_count": 2, "memory_gib": 24, "cpu_model": "test", "date": "now",
                    "load_average_at_start": [1.0], "versions": {}},
        "options": {"events": 1000, "rate": 100, "live_seconds": 30, "change": {},
                    "seed": 1, "repeat": 1},
        "ran_first": "lambda", "designs": ["lambda", "kappa"], "valid": True, "invalid_runs": [],
        "table": table, "late_data": late,
        "lines_of_code": {"note": "n", "shared_lines": 100, "own_lines": {"lambda": 5, "kappa": 3}},
        "sustainable_rate": {"measured": False, "detail": "not measured"},
        "scaling": {"measured": False, "detail": "not measured"},
        "runs": [run("lambda", 10.0, 0), run("kappa", 4.0, 30)],
    }  # fmt: skip
    out["verdict"] = verdict(out)
    return out


@pytest.mark.unit
def test_report_is_self_contained(tmp_path: Path) -> None:
    paths = write_reports(results(), tmp_path)
    page = paths["html"].read_text()
    assert "<script src=" not in page and "<link " not in page  # plotly.js inlined, no CDN
    assert "kappa wins" in page  # the verdict, generated from the literal figures
    summary = paths["md"].read_text()
    assert "| time to serve new logic | s | 120 | 45 |" in summary
    assert "Code run (n): shared 100 lines; lambda-only 5, kappa-only 3." in summary


@pytest.mark.integration
def test_report_plots_render_in_headless_chromium(tmp_path: Path) -> None:
    paths = write_reports(results(), tmp_path)
    found = screenshot(paths["html"], tmp_path / "report.png")
    assert found["plots"] == 4  # freshness, windows, late data, cost
    assert found["drawn"] == 4  # each has drawn points or bars, not empty axes
    assert found["bytes"] > 30_000


@pytest.mark.integration
def test_a_measured_sustainable_rate_gets_its_lag_plot(tmp_path: Path) -> None:
    figures = results()
    lag = [[60.0 + 10 * i, 5_000.0 + 100 * (i % 2)] for i in range(8)]
    trials = [{"rate": 2_000, "valid": True, "sustainable": True, "lag_after_commit": lag}]
    for run in figures["runs"]:
        run["sustainable_rate"] = {"measured": True, "trials": trials}
    figures["sustainable_rate"] = {"measured": True}
    paths = write_reports(figures, tmp_path)
    assert r"lambda 2,000 ev\u002fs: held" in paths["html"].read_text()  # JSON escapes "/"
    found = screenshot(paths["html"], tmp_path / "report.png")
    assert (found["plots"], found["drawn"]) == (5, 5)
