"""Sustainable rate: the highest steady input rate at which a streaming path keeps up.

One run, one broker; the contenders one after the other, each on topics of its own, all
fed by the same load generator (``measure.generator``, a process of its own on a fixed
schedule; a trial whose generator fell behind is invalid, not a result):

* ``floor`` - the bare read, decode and idempotent append to one Delta table
  (:mod:`benchmarks.floor`), with the tuned knobs of :mod:`benchmarks.freshness`;
* ``lk`` - ``lk speed`` (Lambda) in a subprocess, with the same knobs.

A trial sends ``rate`` events/s for a warm-up minute and then ``--minutes``; consumer
lag (log end minus the offsets the contender has processed) is sampled every 5 s after
the warm-up. A rate is sustainable when the lag grew by less than 1 % of the events
sent over the measured window (``measure.stats.lag_grows``). The same search for both:
start at ``--start`` events/s, double while sustainable, halve while not, then bisect
between the highest sustainable and the lowest unsustainable rate, ``--trials`` trials
in all.

Run: ``python -m benchmarks.sustainable_rate [--minutes 5] [--trials 4] [--start 4000]``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from benchmarks.floor import processed_offsets, start_floor
from benchmarks.freshness import tuned
from benchmarks.recompute_vs_replay import isolated
from infra.topics import end_offsets, ensure_topics
from lambda_arch.epochs import LAMBDA_LANE
from lk.config import Settings
from lk.spark import build_session
from lk.tables import Tables
from measure.generator import SteadyGenerator, SteadyPlan
from measure.machine import broker, machine
from measure.stats import lag_grows
from speed_layer.lane import lane_root

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results" / "sustainable_rate.json"
WARM_UP_S = 60
SAMPLE_EVERY_S = 5
GROWTH_LIMIT = 0.01

Processed = Callable[[], dict[int, int] | None]


def lk_processed(settings: Settings) -> dict[int, int] | None:
    """The offsets the Lambda lane has processed (its ``_metrics.json``), None before any."""
    metrics = (
        Path(lane_root(Tables.of(settings), LAMBDA_LANE).removeprefix("file:")) / "_metrics.json"
    )
    try:
        per_topic = json.loads(metrics.read_text()).get("end_offsets") or {}
    except (OSError, ValueError):  # not written yet, or being replaced: the next sample
        return None
    return {int(p): int(o) for p, o in per_topic.get(settings.kafka.events_topic, {}).items()}


@contextmanager
def run_lk(settings: Settings, workdir: Path) -> Iterator[Processed]:
    env = {
        **os.environ,
        "LK_KAFKA__BOOTSTRAP_SERVERS": settings.kafka.bootstrap_servers,
        "LK_KAFKA__EVENTS_TOPIC": settings.kafka.events_topic,
        "LK_KAFKA__CATALOG_TOPIC": settings.kafka.catalog_topic,
        "LK_STORAGE__ROOT": settings.storage.root,
        "LK_STREAM__TRIGGER_INTERVAL": settings.stream.trigger_interval,
        "LK_SPARK__CONF": json.dumps(settings.spark.conf),
        "LK_WATCHDOG__HOME": str(workdir / "run"),
    }
    speed = subprocess.Popen(
        [sys.executable, "-m", "lk.cli.app", "speed"],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=(workdir / "speed.log").open("w"),
    )
    try:
        yield lambda: lk_processed(settings)
    finally:
        speed.terminate()
        speed.wait(timeout=120)


@contextmanager
def run_floor(settings: Settings, workdir: Path) -> Iterator[Processed]:
    spark = build_session(settings, app_name="lk-rate-floor")
    query, _ = start_floor(spark, settings)
    try:
        yield lambda: processed_offsets(query) or None
    finally:
        query.stop()
        spark.stop()


CONTENDERS = {"floor": run_floor, "lk": run_lk}


def trial(
    base: Settings, contender: str, rate: int, minutes: float, workdir: Path
) -> dict[str, Any]:
    """One contender at one rate: the generator runs, the lag is sampled."""
    label = f"{contender}_{rate}"
    settings = tuned(isolated(base, label, workdir))
    ensure_topics(settings)
    here = workdir / label
    here.mkdir(parents=True, exist_ok=True)
    seconds = WARM_UP_S + minutes * 60
    plan = SteadyPlan(
        settings.kafka.bootstrap_servers,
        settings.kafka.events_topic,
        rate=rate,
        seconds=seconds,
        source_args={"seed": rate, "probe_every": 0},
    )
    samples: list[tuple[float, float]] = []
    with (
        CONTENDERS[contender](settings, here) as processed,
        SteadyGenerator(plan, here) as generator,
    ):
        started = time.monotonic()
        while (elapsed := time.monotonic() - started) < seconds:
            time.sleep(SAMPLE_EVERY_S)
            done = processed()
            if done is None or elapsed < WARM_UP_S:
                continue
            ends = end_offsets(settings, settings.kafka.events_topic)
            samples.append((elapsed, sum(ends.values()) - sum(done.values())))
        report = generator.wait()
    measured = rate * (samples[-1][0] - samples[0][0]) if len(samples) > 1 else 0
    keeps_up = not lag_grows(samples, measured, GROWTH_LIMIT)
    return {
        "contender": contender,
        "rate": rate,
        "achieved_rate": round(report.achieved_rate),
        "schedule_lag_seconds": report.schedule_lag,
        "valid": report.valid,
        "lag_first": samples[0][1] if samples else None,
        "lag_last": samples[-1][1] if samples else None,
        "lag_max": max((v for _, v in samples), default=None),
        "lag_growth_share_of_input": round((samples[-1][1] - samples[0][1]) / measured, 4)
        if measured
        else None,
        "sustainable": report.valid and keeps_up,
    }


def search(
    base: Settings, contender: str, args: argparse.Namespace, workdir: Path
) -> list[dict[str, Any]]:
    """Double/halve from ``--start``, then bisect; ``--trials`` trials in all."""
    good, bad, rate, trials = 0, None, args.start, []
    for _ in range(args.trials):
        result = trial(base, contender, rate, args.minutes, workdir)
        trials.append(result)
        print(json.dumps(result), flush=True)
        if not result["valid"]:
            break  # the generator cannot send this fast: no higher rate can be measured
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
        if rate in {t["rate"] for t in trials}:
            break
    return trials


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=5.0)
    parser.add_argument("--trials", type=int, default=4)
    parser.add_argument("--start", type=int, default=4_000)
    parser.add_argument(
        "--contenders", nargs="+", choices=list(CONTENDERS), default=["floor", "lk"]
    )
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="lk-rate-") as tmp:
        workdir = Path(tmp)
        with broker(None, workdir / "kafka") as base:
            info = machine(base)
            trials = {name: search(base, name, args, workdir) for name in args.contenders}
    best = {
        name: max((t["rate"] for t in runs if t["sustainable"]), default=None)
        for name, runs in trials.items()
    }
    report: dict[str, Any] = {
        "benchmark": "sustainable_rate",
        "machine": info,
        "order": args.contenders,
        "warm_up_seconds": WARM_UP_S,
        "trial_minutes": args.minutes,
        "sustainable_means": f"lag grows by less than {GROWTH_LIMIT:.0%} of the input",
        "trials": trials,
        "highest_sustainable_rate": best,
    }
    if best.get("lk") and best.get("floor"):
        report["lk_over_floor"] = round(best["lk"] / best["floor"], 3)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2))
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
