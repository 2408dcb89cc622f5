"""The sustainable-rate search, one implementation for ``lk compare`` and the benchmarks.

Sustainable rate (``measuring.md``): the highest steady input rate at which a streaming
path's consumer lag grows by less than 1 % of the input over the measured window,
after a warm-up. The generator runs in a process of its own on a fixed schedule; a
trial whose generator fell behind is invalid, and ends the search (the machine, not
the contender, is then the limit).

A micro-batch engine's lag is a saw: it climbs while a micro-batch runs and drops when
it commits. Sampled at arbitrary moments, a few teeth give a trend that depends on where
the samples fell. So the lag is read just after each commit (when the processed offsets
move), the bottom of every tooth, and the trend is fitted through those.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from measure.generator import SteadyGenerator, SteadyPlan
from measure.stats import lag_grows, slope

GROWTH_LIMIT = 0.01

#: Offsets per partition the contender has processed; None before its first commit.
Processed = Callable[[], dict[int, int] | None]
#: Offsets per partition at the end of the log, now.
LogEnd = Callable[[], dict[int, int]]


@dataclass(frozen=True)
class TrialWindow:
    """How long a trial sends, and which part of it is measured.

    Attributes:
        warm_up_s: seconds sent before the lag counts (the first micro-batches).
        measure_s: seconds measured after the warm-up.
        poll_s: how often the processed offsets are polled for a commit.
    """

    warm_up_s: float = 60.0
    measure_s: float = 300.0
    poll_s: float = 0.5

    @property
    def seconds(self) -> float:
        """The generator's whole run."""
        return self.warm_up_s + self.measure_s


def trial(
    plan: SteadyPlan,
    window: TrialWindow,
    processed: Processed,
    log_end: LogEnd,
    workdir: Path,
) -> dict[str, Any]:
    """One rate: the generator sends ``plan``; the lag after each commit is recorded.

    The contender must already be running (or start on its own) and read ``plan.topic``.
    """
    commits: list[tuple[float, float]] = []
    last: dict[int, int] | None = None
    with SteadyGenerator(plan, workdir) as generator:
        started = time.monotonic()
        while (elapsed := time.monotonic() - started) < window.seconds:
            time.sleep(window.poll_s)
            done = processed()
            if done is None or done == last:
                continue
            last = done
            if elapsed >= window.warm_up_s:
                lag = sum(log_end().values()) - sum(done.values())
                commits.append((round(elapsed, 2), float(lag)))
        report = generator.wait()
    return judge(plan.rate, commits, report.valid) | {
        "achieved_rate": round(report.achieved_rate),
        "schedule_lag_seconds": report.schedule_lag,
        "warm_up_seconds": window.warm_up_s,
        "measured_seconds": window.measure_s,
    }


def judge(rate: float, commits: list[tuple[float, float]], valid: bool) -> dict[str, Any]:
    """Whether the lag after each commit stayed flat (within ``GROWTH_LIMIT`` of the input)."""
    span = commits[-1][0] - commits[0][0] if len(commits) > 1 else 0.0
    sent = rate * span
    growth = slope(commits) * span
    keeps_up = len(commits) > 1 and not lag_grows(commits, sent, GROWTH_LIMIT)
    return {
        "rate": rate,
        "valid": valid,
        "commits_measured": len(commits),
        "lag_after_commit": commits,
        "lag_first": commits[0][1] if commits else None,
        "lag_last": commits[-1][1] if commits else None,
        "lag_max": max((v for _, v in commits), default=None),
        "lag_growth_share_of_input": round(growth / sent, 4) if sent else None,
        "sustainable": valid and keeps_up,
    }


def search(run_trial: Callable[[int], dict[str, Any]], start: int, trials: int) -> dict[str, Any]:
    """Double from ``start`` while sustainable, halve while not, then bisect.

    The same search for every contender; ``trials`` trials at most, rates rounded to
    hundreds; a trial whose generator fell behind ends it.
    """
    good, bad, rate, done = 0, None, start, []
    for _ in range(trials):
        result = run_trial(rate)
        done.append(result)
        if not result["valid"]:
            break
        if result["sustainable"]:
            good = max(good, rate)
        else:
            bad = rate if bad is None else min(bad, rate)
        if bad is None:
            rate *= 2
        elif good == 0:
            rate //= 2
        else:
            rate = (good + bad) // 2
        rate = int(round(rate, -2))
        if rate <= 0 or rate in {t["rate"] for t in done}:
            break
    failed = [t["rate"] for t in done if t["valid"] and not t["sustainable"]]
    return {
        "measured": True,
        "highest_sustainable_rate": max(
            (t["rate"] for t in done if t["sustainable"]), default=None
        ),
        "lowest_failed_rate": min(failed, default=None),
        "generator_fell_behind_at": next((t["rate"] for t in done if not t["valid"]), None),
        "criterion": f"lag after each commit grows by less than {GROWTH_LIMIT:.0%} of the input "
        "over the measured window, after a warm-up",
        "trials": done,
    }
