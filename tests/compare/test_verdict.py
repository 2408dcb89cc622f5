from __future__ import annotations

import pytest

from compare.verdict import axis, late_sentences, verdict

pytestmark = pytest.mark.unit


def stat(*values: float) -> dict:
    ordered = sorted(values)
    return {
        "median": ordered[len(ordered) // 2],
        "min": ordered[0],
        "max": ordered[-1],
        "n": len(values),
    }


def row(lam: dict, kap: dict, lower: bool = True) -> dict:
    return {
        "metric": "time to serve new logic",
        "unit": "s",
        "lower_is_better": lower,
        "lambda": lam,
        "kappa": kap,
    }


def test_a_winner_only_where_the_spread_allows() -> None:
    assert "kappa wins" in axis(row(stat(90, 100, 110), stat(40, 50, 60)), "lambda", "kappa")
    assert "no clear winner" in axis(row(stat(50, 100, 110), stat(40, 60, 95)), "lambda", "kappa")
    assert "lambda wins" in axis(row(stat(100), stat(50), lower=False), "lambda", "kappa")
    assert "no clear winner" in axis(row(stat(100), stat(95)), "lambda", "kappa")
    # an answer before the window's end is a negative delay: no ratio, the difference
    assert "kappa wins (-4.93 vs 52.6 s, lower by 57.5 s" in axis(
        row(stat(52.6), stat(-4.93)), "lambda", "kappa"
    )


def late(excluded: float, absorbed: float, lateness: str = "1 minute") -> list[dict]:
    return [
        {
            "allowed_lateness": lateness,
            "late_in_streaming": excluded + absorbed,
            "absorbed_later": absorbed,
            "excluded_for_good": excluded,
            "unique_events": 10_000,
        }
    ]


def test_late_data_conclusion_follows_the_numbers() -> None:
    none = late_sentences({"lambda": late(0, 0), "kappa": late(0, 0)}, "lambda", "kappa")
    some = late_sentences({"lambda": late(0, 40), "kappa": late(40, 0)}, "lambda", "kappa")
    assert none != some
    assert "neither design lost an event" in none[0]
    assert "kappa excluded 40 events for good (0.40% of the log)" in some[0]
    assert "lambda excluded 0 (it absorbed 40 later)" in some[0]


def test_an_invalid_run_says_so_first() -> None:
    results = {"designs": ["lambda", "kappa"], "valid": False, "table": [], "late_data": {}}
    assert verdict(results)[0].startswith("INVALID RUN")


def test_the_sustainable_rate_sentence_names_what_held_and_what_failed() -> None:
    results = {
        "designs": ["lambda", "kappa"],
        "valid": True,
        "table": [],
        "late_data": {},
        "sustainable_rate": {
            "measured": True,
            "per_design": {
                "lambda": {"highest": None, "lowest_failed": stat(2000)},
                "kappa": {"highest": stat(4000), "lowest_failed": stat(8000)},
            },
        },
    }
    assert verdict(results)[-1] == (
        "Sustainable rate (the highest rate whose lag stayed flat): "
        "lambda: none of the rates tried held (2,000 failed); kappa 4,000 events/s (8,000 failed)."
    )


def test_a_rate_the_generator_could_not_send_is_the_machines_limit() -> None:
    from compare.verdict import sustained_phrase

    found = {"highest": stat(4000), "lowest_failed": None, "generator_fell_behind_at": stat(8000)}
    assert sustained_phrase("lambda", found) == (
        "lambda 4,000 events/s (at 8,000 the generator fell behind: the machine's limit, "
        "not the design's)"
    )
