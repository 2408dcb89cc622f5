from __future__ import annotations

import pytest

from compare.summary import growth
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
