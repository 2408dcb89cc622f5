from __future__ import annotations

import pytest

from compare.headline import floor_sentence
from compare.summary import floor_figures, growth
from compare.verdict import scaling_sentences

pytestmark = pytest.mark.unit


def test_growth_reads_the_exponent_of_a_log_log_fit() -> None:
    linear = [{"events": n, "seconds": n / 10_000} for n in (250_000, 500_000, 1_000_000)]
    flat = [{"events": n, "seconds": 60 + n / 1e6} for n in (250_000, 500_000, 1_000_000)]
    sub = [{"events": n, "seconds": 20 + n / 10_000} for n in (250_000, 500_000, 1_000_000)]
    assert growth(linear) == {"exponent": 1.0, "reading": "about linear"}
    assert growth(sub)["reading"] == "sub-linear"
    assert growth(flat)["reading"].startswith("flat: fixed costs")
    sentences = scaling_sentences(
        {"points": {"kappa": linear}, "growth": {"kappa": growth(linear)}}
    )
    assert sentences == [
        "Scaling, kappa: 250,000: 25 s, 500,000: 50 s, 1,000,000: 100 s; "
        "time ~ events^1.0 (about linear)."
    ]


def _floor_run(p50: float, p99: float) -> dict:
    steady = {"steady": True, "why_not": []}
    return {
        "design": "floor",
        "freshness": {
            "processing_time_s": {"p50": p50, "p99": p99},
            "never_seen_unexplained": 0,
        },
        "live": {"median_micro_batch_s": 1.5, "steadiness": steady},
    }


def test_each_design_is_a_multiple_of_the_floor_from_the_same_run() -> None:
    table = [
        {"metric": "freshness p50 (ack -> visible)", "lambda": {"median": 12.0}, "kappa": None},
        {"metric": "freshness p99 (ack -> visible)", "lambda": {"median": 30.0}, "kappa": None},
    ]
    figures = floor_figures([_floor_run(4.0, 6.0)], table, ["lambda", "kappa"], poll_s=1.0)
    assert figures["freshness_p50_s"] == {"median": 4.0, "min": 4.0, "max": 4.0, "n": 1}
    assert figures["times_the_floor"] == {"lambda": {"p50": 3.0, "p99": 5.0}, "kappa": {}}
    assert figures["probes_never_seen"] == 0
    assert "every 1 s" in figures["note"]
    results = {"floor": figures}
    assert floor_sentence(results) == (
        "Against the views floor (read, decode, de-duplicate, compute the views, one commit: "
        "p50 4 s, p99 6 s here): lambda 3x at p50 and 5x at p99."
    )


def test_no_floor_run_no_floor_sentence() -> None:
    figures = floor_figures([], [], ["lambda", "kappa"], poll_s=1.0)
    assert figures["measured"] is False
    assert floor_sentence({"floor": figures}) is None
