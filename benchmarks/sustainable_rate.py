"""Sustainable rate: the highest steady input rate at which the speed layer's lag stays flat.

One run, one broker, side by side:

* ``ceiling_read_decode`` - a bare Spark job that reads a preloaded topic and decodes it
  (events/s): what any consumer of this topic can do on this machine;
* ``catch_up`` - ``lk speed --until-caught-up`` over the same preloaded topic (events/s
  with full micro-batches): an upper bound for the steady rate;
* steady trials - ``lk speed`` (default trigger, in a subprocess) while a producer sends
  the benchmark workload at a fixed rate for ``--minutes``; consumer lag (log end minus
  the lane's last processed offsets) is sampled every few seconds. A rate is sustainable
  when the lag's least-squares slope over the trial (after a warm-up minute) is below
  2 % of the rate: the lag is flat. Trials run at 0.8, 0.5 and 0.3 of the catch-up rate
  (or ``--rates``), stopping at the first sustainable one.

Reported: every trial, the highest sustainable rate, and that rate over the ceiling.

Run: ``python -m benchmarks.sustainable_rate [--minutes 5] [--rates 4000 2000]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kafka import KafkaProducer

from benchmarks.producer_throughput import broker, machine
from benchmarks.recompute_vs_replay import (
    ceiling_read_decode,
    isolated,
    load_topic,
    records_file,
    spec_for,
    timed,
)
from infra.topics import end_offsets, ensure_topics
from lambda_arch.epochs import LAMBDA_LANE, run_speed
from lk.config import Settings
from lk.spark import build_session
from lk.tables import Tables
from speed_layer.lane import lane_root

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results" / "sustainable_rate.json"
PRELOAD = 300_000
STEADY_SOURCE = 5_000_000  # a long workload, so event time moves forward for the whole trial
FLAT_SLOPE = 0.02


def records(path: Path) -> Iterator[tuple[str, bytes, bytes | None]]:
    """``(topic, key, value)`` from a cached workload file, in send order."""
    with path.open() as lines:
        for line in lines:
            topic, key, value = line.rstrip("\n").split("\t", 2)
            yield topic, key.encode(), value.encode() if value else None


def lag(settings: Settings) -> int | None:
    """Offsets in the log that the speed lane has not processed (None before its first batch)."""
    metrics = (
        Path(lane_root(Tables.of(settings), LAMBDA_LANE).removeprefix("file:")) / "_metrics.json"
    )
    if not metrics.exists():
        return None
    try:
        per_topic = json.loads(metrics.read_text()).get("end_offsets") or {}
    except (OSError, ValueError):  # replaced at this instant: take the next sample
        return None
    done = per_topic.get(settings.kafka.events_topic, {})
    ends = end_offsets(settings, settings.kafka.events_topic)
    return sum(ends.values()) - sum(int(v) for v in done.values())


def slope(samples: list[tuple[float, int]]) -> float:
    """Least-squares slope of lag over time, offsets per second."""
    xs, ys = [t for t, _ in samples], [v for _, v in samples]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    var = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / var if var else 0.0


def steady_trial(base: Settings, workdir: Path, rate: int, minutes: float) -> dict[str, Any]:
    """``lk speed`` under a steady producer at ``rate`` events/s; lag sampled throughout."""
    settings = isolated(base, f"steady_{rate}", workdir)
    ensure_topics(settings)
    env = {
        **os.environ,
        "LK_KAFKA__BOOTSTRAP_SERVERS": settings.kafka.bootstrap_servers,
        "LK_KAFKA__EVENTS_TOPIC": settings.kafka.events_topic,
        "LK_KAFKA__CATALOG_TOPIC": settings.kafka.catalog_topic,
        "LK_STORAGE__ROOT": settings.storage.root,
    }
    topics = {"events": settings.kafka.events_topic, "catalog": settings.kafka.catalog_topic}
    producer = KafkaProducer(
        bootstrap_servers=settings.kafka.bootstrap_servers, linger_ms=20, compression_type="gzip"
    )
    speed = subprocess.Popen(
        [sys.executable, "-m", "lk.cli.app", "speed"],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    stop = threading.Event()
    sent = 0

    def send() -> None:
        nonlocal sent
        source = records(records_file(spec_for(STEADY_SOURCE)))
        start = time.monotonic()
        while not stop.is_set():
            due = (time.monotonic() - start) * rate
            while sent < due:
                topic, key, value = next(source)
                producer.send(topics[topic], key=key, value=value)
                sent += topic == "events"
            time.sleep(0.002)

    sender = threading.Thread(target=send, daemon=True)
    samples: list[tuple[float, int]] = []
    try:
        sender.start()
        started = time.monotonic()
        while (elapsed := time.monotonic() - started) < 60 + minutes * 60:
            time.sleep(5)
            value = lag(settings)
            if value is not None and elapsed >= 60:
                samples.append((elapsed, value))
    finally:
        stop.set()
        sender.join()
        producer.flush()
        speed.terminate()
        speed.wait(timeout=120)
    growth = slope(samples) if len(samples) > 1 else float("inf")
    return {
        "rate": rate,
        "achieved_rate": round(sent / (time.monotonic() - started)),
        "lag_first": samples[0][1] if samples else None,
        "lag_last": samples[-1][1] if samples else None,
        "lag_max": max((v for _, v in samples), default=None),
        "lag_slope_per_s": round(growth, 1),
        "sustainable": growth < FLAT_SLOPE * rate,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=5.0)
    parser.add_argument("--rates", type=int, nargs="*", default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="lk-rate-") as tmp:
        workdir = Path(tmp)
        with broker(None, workdir / "kafka") as base:
            preloaded = isolated(base, "preloaded", workdir)
            ensure_topics(preloaded)
            spark = build_session(preloaded, app_name="lk-bench-rate")
            load_topic(spark, preloaded, records_file(spec_for(PRELOAD)))
            logged = sum(end_offsets(preloaded, preloaded.kafka.events_topic).values())
            ceiling_s, _ = timed(lambda: ceiling_read_decode(spark, preloaded))
            catch_up_s, _ = timed(lambda: run_speed(spark, preloaded, until_caught_up=True))
            spark.stop()
            ceiling, catch_up = logged / ceiling_s, logged / catch_up_s
            print(f"ceiling {ceiling:.0f} ev/s, catch-up {catch_up:.0f} ev/s", flush=True)
            rates = args.rates or [round(catch_up * f, -2) for f in (0.8, 0.5, 0.3)]
            trials = []
            for rate in rates:
                trials.append(steady_trial(base, workdir, int(rate), args.minutes))
                print(json.dumps(trials[-1]), flush=True)
                if trials[-1]["sustainable"]:
                    break
            best = max((t["rate"] for t in trials if t["sustainable"]), default=None)
            report = {
                "benchmark": "sustainable_rate",
                "machine": machine(base),
                "preloaded_events": logged,
                "ceiling_read_decode_events_per_s": round(ceiling),
                "catch_up_events_per_s": round(catch_up),
                "catch_up_vs_ceiling": round(catch_up / ceiling, 3),
                "trial_minutes": args.minutes,
                "flat_means": f"lag slope < {FLAT_SLOPE:.0%} of the rate",
                "trials": trials,
                "highest_sustainable_rate": best,
                "sustainable_vs_ceiling": round(best / ceiling, 3) if best else None,
            }
            RESULTS.parent.mkdir(parents=True, exist_ok=True)
            RESULTS.write_text(json.dumps(report, indent=2))
            print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
