"""The views floor's live phase, in the same run: ``python -m compare.floor_design JOB.json``.

A design's freshness means little alone: on two cores, Spark and Delta pay seconds per
micro-batch whatever the design. The views floor (:mod:`compare.floor`: read, decode,
de-duplicate, compute every view over the micro-batch, one idempotent commit) does what
the contract requires of any design and nothing more, so each design's freshness is
reported as a multiple of the floor's, measured on this machine minutes apart, over the
same history and the same seeded live records.

A probe is visible to the floor when the micro-batch that carries it has committed: the
floor has no serving layer, so the designs' figures also hold their serving and the
watcher's poll interval (``poll_s``), which the report names.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from compare.design import live_plan, say
from compare.floor import reached, start_floor
from compare.metrics import freshness
from compare.options import CompareOptions
from compare.steadiness import state_horizons, steadiness
from config.settings import load_settings
from designs.platform import build
from event_log.topics import end_offsets
from measure.generator import SteadyGenerator
from measure.live import PROBE_BASE

#: How long the floor may take over the history, and to show the last probe after the live phase.
PATIENCE_S = 300.0


def run(job: dict[str, Any]) -> dict[str, Any]:
    """The floor over the history, then the live phase's records; its figures as a dict."""
    from lake.spark import build_session

    opts = CompareOptions.model_validate(job["options"])
    settings = load_settings(**job["settings"])
    spark = build_session(settings, app_name="lk-compare-floor")
    registry = build(settings).registry
    seen: dict[int, float] = {}

    def note(batch: DataFrame, _: int, committed: float) -> None:
        probes = batch.where(
            (F.col("event_type") == "add_to_cart") & (F.col("user_id") >= PROBE_BASE)
        ).select("user_id")
        for row in probes.collect():
            seen.setdefault(int(row.user_id), committed)

    query, durations = start_floor(spark, settings, note, registry, deduplicate=True)
    try:
        history = end_offsets(settings, settings.kafka.events_topic)
        started = time.perf_counter()
        _wait(lambda: reached(query, history))
        say("history", message=f"floor read the history in {time.perf_counter() - started:.1f} s")
        durations.clear()
        plan = live_plan(settings, opts, job["seed"])
        with SteadyGenerator(plan, Path(job["workdir"])) as generator:
            say("live", message=f"generator sends {plan.rate:g} events/s for {plan.seconds:g} s")
            schedule = generator.wait()
        _wait(lambda: {int(p["id"]) for p in schedule.probes} <= seen.keys())
    finally:
        query.stop()
        spark.stop()
    in_order = [seconds for _, seconds in durations]
    result = {
        "design": "floor",
        "seed": job["seed"],
        "live": {
            "valid": schedule.valid,
            "micro_batches": len(in_order),
            "median_micro_batch_s": sorted(in_order)[len(in_order) // 2] if in_order else None,
            "steadiness": steadiness(in_order, plan.seconds, state_horizons(settings, registry)),
        },
        "freshness": freshness(schedule.probes, seen, set(), schedule.started_at + opts.warmup_s),
    }
    fresh = result["freshness"]["processing_time_s"] or {}
    say("freshness", message=f"floor: ack -> committed p50 {fresh.get('p50')} s")
    return result


def _wait(until: Callable[[], bool]) -> None:
    deadline = time.monotonic() + PATIENCE_S
    while not until():
        if time.monotonic() > deadline:
            raise TimeoutError(f"the floor did not get there within {PATIENCE_S:.0f} s")
        time.sleep(0.25)


def main(argv: list[str]) -> int:
    """Run the job; write its ``out`` file."""
    job = json.loads(Path(argv[0]).read_text())
    Path(job["out"]).write_text(json.dumps(run(job), default=str))
    say("done", message="floor done")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
