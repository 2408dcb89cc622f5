"""Sustainable rate: the highest steady input rate at which a streaming path keeps up.

One run, one broker; the contenders one after the other, each on topics of its own, all
fed by the same load generator (``measure.generator``, a process of its own on a fixed
schedule; a trial whose generator fell behind is invalid, not a result):

* ``floor`` - the bare read, decode and idempotent append to one Delta table
  (:mod:`compare.floor`), with the tuned knobs of :mod:`benchmarks.freshness`;
* ``lk`` - ``lk speed`` (Lambda) in a subprocess, with the same knobs.

A trial sends ``rate`` events/s for a warm-up minute and then ``--minutes``; consumer
lag (log end minus the offsets the contender has processed) is read after each of its
commits. A rate is sustainable when that lag grew by less than 1 % of the events sent
over the measured window. The search and the trial are ``measure.sustain``'s, the same
``lk compare --sustainable`` runs: start at ``--start`` events/s, double while
sustainable, halve while not, then bisect, ``--trials`` trials in all.

Run: ``python -m benchmarks.sustainable_rate [--minutes 5] [--trials 4] [--start 4000]``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

from benchmarks.freshness import tuned
from benchmarks.recompute_vs_replay import isolated
from compare.floor import processed_offsets, start_floor
from config.settings import Settings
from designs.lambda_arch.epochs import LAMBDA_LANE
from event_log.topics import end_offsets, ensure_topics
from lake.spark import build_session
from lake.tables import Tables
from measure import sustain
from measure.generator import SteadyPlan
from measure.machine import broker, machine
from measure.sustain import Processed, TrialWindow
from speed_layer import metrics as lane_metrics
from speed_layer.lane import lane_root

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results" / "sustainable_rate.json"
WARM_UP_S = 60


def lk_processed(settings: Settings) -> dict[int, int] | None:
    """The offsets the Lambda lane has processed (its newest metrics), None before any."""
    metrics = lane_metrics.read_metrics(None, lane_root(Tables.of(settings), LAMBDA_LANE))
    return lane_metrics.processed_offsets(metrics, settings.kafka.events_topic)


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
    base: Settings, contender: str, rate: int, window: TrialWindow, workdir: Path
) -> dict[str, Any]:
    """One contender at one rate, on topics of its own (``measure.sustain.trial``)."""
    label = f"{contender}_{rate}"
    settings = tuned(isolated(base, label, workdir))
    ensure_topics(settings)
    here = workdir / label
    here.mkdir(parents=True, exist_ok=True)
    plan = SteadyPlan(
        settings.kafka.bootstrap_servers,
        settings.kafka.events_topic,
        rate=rate,
        seconds=window.seconds,
        source_args={"seed": rate, "probe_every": 0},
    )
    with CONTENDERS[contender](settings, here) as processed:
        result = sustain.trial(
            plan,
            window,
            processed,
            lambda: end_offsets(settings, settings.kafka.events_topic),
            here,
        )
    result = {"contender": contender, **result}
    print(json.dumps({k: v for k, v in result.items() if k != "lag_after_commit"}), flush=True)
    return result


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
            window = TrialWindow(warm_up_s=WARM_UP_S, measure_s=args.minutes * 60)
            searches = {
                name: sustain.search(
                    partial(trial, base, name, window=window, workdir=workdir),
                    args.start,
                    args.trials,
                )
                for name in args.contenders
            }
    best = {name: found["highest_sustainable_rate"] for name, found in searches.items()}
    report: dict[str, Any] = {
        "benchmark": "sustainable_rate",
        "machine": info,
        "order": args.contenders,
        "warm_up_seconds": WARM_UP_S,
        "trial_minutes": args.minutes,
        "sustainable_means": next(iter(searches.values()))["criterion"],
        "trials": {name: found["trials"] for name, found in searches.items()},
        "lowest_failed_rate": {n: f["lowest_failed_rate"] for n, f in searches.items()},
        "highest_sustainable_rate": best,
    }
    if best.get("lk") and best.get("floor"):
        report["lk_over_floor"] = round(best["lk"] / best["floor"], 3)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2))
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
