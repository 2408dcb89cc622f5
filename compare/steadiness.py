"""Whether a live phase measured the design at work or the design starting up.

A streaming job's first micro-batches compile code and fill caches, and its state (a
join's look-back, de-duplication ids held for a horizon) fills for as long as that
horizon. A freshness figure taken before both settle describes start-up, not the design,
and the report says so instead of leaving the reader to guess (docs/benchmarks.md,
"Steady state"). The rule is the benchmarks' flatness rule, applied to one live phase.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import timedelta
from statistics import median
from typing import Any

#: The later half's median micro-batch within this factor of the earlier half's: flat.
FLAT = 1.2
#: Fewer micro-batches than this say nothing about a trend.
FEWEST = 10


def state_horizons(settings: Any, registry: Any) -> dict[str, timedelta]:
    """How long each piece of a lane's state takes to fill: join look-backs, held ids."""
    horizons = {
        f"{view.name} look-back": view.context_lookback(settings.views)
        for view in registry
        if view.context_lookback is not None
    }
    if settings.stream.dedup_horizon is not None:
        horizons["de-duplication horizon"] = settings.stream.dedup_horizon
    return horizons


def steadiness(
    durations_s: Sequence[float], live_s: float, horizons: Mapping[str, timedelta]
) -> dict[str, Any]:
    """The live phase's micro-batch trend and whether its figures are steady-state ones.

    ``durations_s``: the micro-batches in the order they ran. The first is left out of the
    earlier half (it carries the compilation); it is reported on its own.
    """
    n = len(durations_s)
    half = n // 2
    early = median(durations_s[1:half]) if half > 1 else None
    late = median(durations_s[half:]) if n else None
    why: list[str] = []
    if n < FEWEST:
        why.append(f"{n} micro-batches, too few to show a trend (at least {FEWEST})")
    elif early and late and not 1 / FLAT <= late / early <= FLAT:
        trend = "shrinking" if late < early else "growing"
        why.append(
            f"micro-batches still {trend}: median {early:.3g} s in the first half, "
            f"{late:.3g} s in the second"
        )
    longest = max(horizons.items(), key=lambda item: item[1], default=None)
    if longest is not None and live_s < longest[1].total_seconds():
        why.append(
            f"the live phase ran {live_s:.0f} s, shorter than the {longest[0]} "
            f"({longest[1].total_seconds():.0f} s) its state takes to fill"
        )
    return {
        "micro_batches": n,
        "first_micro_batch_s": durations_s[0] if n else None,
        "median_first_half_s": early,
        "median_second_half_s": late,
        "live_s": round(live_s, 1),
        "longest_state_horizon": (
            {"what": longest[0], "seconds": longest[1].total_seconds()} if longest else None
        ),
        "steady": not why,
        "why_not": why,
    }
