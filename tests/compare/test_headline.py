"""The verdict at the top of the report, from a committed results.json (three seeds)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from compare.headline import headline, ties

pytestmark = pytest.mark.unit

RESULTS = Path(__file__).parent / "data" / "results_three_seeds.json"

SAMPLE = [
    "Correctness: lambda ahead, rows off the oracle at the end of live 44 [39-47] vs 86 [65-93] "
    "rows (medians [ranges] of 3 seeds).",
    "Freshness: kappa ahead, p50 23 [22-24.1] vs 31.8 [29.6-32.4] s, p99 29.5 [28.5-31.6] vs "
    "37.4 [35.6-40] s (medians [ranges] of 3 seeds).",
    "Late data: lambda lost 0 events for good; kappa lost 54 (0.68% of the log) at 1 minute of "
    "allowed lateness, 0 at 30 minutes (medians of 3 seeds).",
    "Cost: kappa ahead, CPU per M records 28,625 [28,252-31,166] vs 37,845 [36,717-39,703] "
    "CPU-s; but lambda ahead, peak storage 3.47 [3.41-3.63] vs 3.96 [3.9-4.01] MB "
    "(medians [ranges] of 3 seeds).",
    "Operations: kappa ahead, tables + checkpoints 5 vs 15, jobs 3 vs 5 "
    "(medians [ranges] of 3 seeds).",
]


def results() -> dict:
    return json.loads(RESULTS.read_text())


def row(figures: dict, metric: str) -> dict:
    return next(r for r in figures["table"] if r["metric"] == metric)


def test_one_sentence_per_decision_with_its_numbers_and_their_spread() -> None:
    assert headline(results()) == SAMPLE


def test_figures_that_tie_stay_out() -> None:
    figures = results()
    # lambda 28.9 s [27.1-31.4] against kappa 28.9 s: the ranges overlap
    assert "time to serve new logic" in ties(figures)
    assert not any(s.startswith("Time to serve new logic") for s in headline(figures))
    assert not any("peak memory" in s for s in headline(figures))


def test_a_faster_replay_adds_its_sentence_and_leaves_the_others() -> None:
    figures = results()
    kappa = row(figures, "time to serve new logic")["kappa"]
    kappa.update(median=9.5, min=9.0, max=10.0)
    assert headline(figures) == [
        *SAMPLE[:2],
        "Time to serve new logic: kappa ahead, serving it took 9.5 [9-10] vs "
        "28.9 [27.1-31.4] s (medians [ranges] of 3 seeds).",
        *SAMPLE[2:],
    ]


def test_slower_freshness_turns_its_sentence_around() -> None:
    figures = results()
    for metric in ("freshness p50 (ack -> visible)", "freshness p99 (ack -> visible)"):
        row(figures, metric)["kappa"].update(median=60.0, min=55.0, max=65.0)
    assert headline(figures)[1] == (
        "Freshness: lambda ahead, p50 31.8 [29.6-32.4] vs 60 [55-65] s, p99 37.4 [35.6-40] vs "
        "60 [55-65] s (medians [ranges] of 3 seeds)."
    )
    assert headline(figures)[:1] + headline(figures)[2:] == SAMPLE[:1] + SAMPLE[2:]


def test_one_run_says_its_spread_was_not_measured() -> None:
    figures = results()
    for r in figures["table"]:
        for design in figures["designs"]:
            if r.get(design):
                r[design] = {**r[design], "n": 1, "min": r[design]["median"],
                             "max": r[design]["median"]}  # fmt: skip
    assert headline(figures)[-1] == (
        "Operations: kappa ahead, tables + checkpoints 5 vs 15, jobs 3 vs 5 "
        "(one run, gap over 20%, no spread)."
    )


def test_an_invalid_run_says_so_first_and_a_run_without_winners_says_that() -> None:
    figures = results()
    figures["valid"] = False
    assert headline(figures)[0].startswith("INVALID RUN")
    even = copy.deepcopy(results())
    for r in even["table"]:
        r["kappa"] = r["lambda"]
    even["late_data"]["kappa"] = even["late_data"]["lambda"]
    assert headline(even) == ["No figure separates the two designs in this run: see the tables."]


def test_a_run_that_never_settled_says_its_freshness_is_start_up() -> None:
    figures = results()
    kappa_run = next(r for r in figures["runs"] if r["design"] == "kappa")
    kappa_run["live"]["steadiness"] = {
        "steady": False,
        "why_not": ["8 micro-batches, too few to show a trend (at least 10)"],
    }
    lines = headline(figures)
    assert lines[2] == (
        "Start-up: the freshness figures describe start-up, not steady state (kappa: "
        "8 micro-batches, too few to show a trend (at least 10)); a longer live phase "
        "(--live-seconds) measures the designs at work."
    )
    assert lines[:2] + lines[3:] == SAMPLE
