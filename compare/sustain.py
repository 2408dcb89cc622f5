"""A design's sustainable rate, and its time to serve new logic at several history lengths.

Sustainable rate (``measuring.md``): the highest input rate at which the streaming
path's consumer lag grows by less than 1 % of the input over the measurement window,
after a warm-up third. Trials run at rising rates until one fails (or the
generator itself falls behind, which ends the search: the machine, not the design,
is then the limit).
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

from infra.topics import end_offsets
from lk.wiring import Platform
from measure.generator import SteadyGenerator, SteadyPlan
from measure.machine import local_dir
from measure.stats import lag_grows, slope
from speed_layer.lane import lane_root

GROWTH_LIMIT = 0.01


def lane_lag(spark: Any, platform: Platform) -> int | None:
    """Log end minus the serving lane's processed offsets (None before its first batch)."""
    root = local_dir(lane_root(platform.tables, platform.streaming_lane_name(spark)))
    try:
        ends = json.loads((root / "_metrics.json").read_text()).get("end_offsets") or {}
    except (OSError, ValueError):
        return None
    done = {int(p): int(o) for p, o in next(iter(ends.values()), {}).items()}
    log_end = end_offsets(platform.settings, platform.settings.kafka.events_topic)
    return sum(o - done.get(p, 0) for p, o in log_end.items())


def trial(
    spark: Any, platform: Platform, rate: float, seconds: float, workdir: Path
) -> dict[str, Any]:
    """The streaming job under ``rate`` events/s for ``seconds``; lag sampled every 2 s."""
    errors: list[BaseException] = []

    def stream() -> None:
        try:
            platform.run_streaming(spark, until_caught_up=False)
        except BaseException as error:
            errors.append(error)

    settings = platform.settings
    plan = SteadyPlan(
        settings.kafka.bootstrap_servers,
        settings.kafka.events_topic,
        rate=rate,
        seconds=seconds,
        source_args={"seed": int(rate), "probe_every": 0, "late_fraction": 0.0},
    )
    thread = threading.Thread(target=stream, daemon=True)
    thread.start()
    samples: list[tuple[float, float]] = []
    with SteadyGenerator(plan, workdir) as generator:
        started = time.monotonic()
        while (elapsed := time.monotonic() - started) < seconds:
            time.sleep(2)
            lag = lane_lag(spark, platform)
            if lag is not None and elapsed >= seconds / 3:
                samples.append((elapsed, float(lag)))
        schedule = generator.wait()
    for query in spark.streams.active:
        query.stop()
    thread.join(timeout=120)
    if errors:
        raise RuntimeError(f"the streaming job failed: {errors[0]}") from errors[0]
    measured = rate * (samples[-1][0] - samples[0][0]) if len(samples) > 1 else 0.0
    return {
        "rate": rate,
        "generator_valid": schedule.valid,
        "schedule_lag": schedule.schedule_lag,
        "lag_samples": len(samples),
        "lag_first": samples[0][1] if samples else None,
        "lag_last": samples[-1][1] if samples else None,
        "lag_slope_per_s": round(slope(samples), 2),
        "sustainable": schedule.valid and not lag_grows(samples, measured, GROWTH_LIMIT),
    }


def search(
    spark: Any, platform: Platform, rates: list[float], seconds: float, workdir: Path
) -> dict[str, Any]:
    """Trials at ``rates`` (ascending), stopping at the first that is not sustainable."""
    trials = []
    for rate in rates:
        trials.append(trial(spark, platform, rate, seconds, workdir))
        if not trials[-1]["sustainable"] or not trials[-1]["generator_valid"]:
            break
    best = max((t["rate"] for t in trials if t["sustainable"]), default=None)
    return {
        "measured": True,
        "highest_sustainable_rate": best,
        "criterion": f"lag grows by less than {GROWTH_LIMIT:.0%} of the input "
        "after a warm-up third",
        "trial_seconds": seconds,
        "trials": trials,
    }
