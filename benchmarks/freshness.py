"""Freshness: time from Kafka's acknowledgement of an event to its visibility.

One run, one broker, two contenders side by side, each on topics of its own and the
same steady producer (``--rate`` events/s for ``--seconds``):

* ``lk`` - ``lk speed`` (Lambda, default trigger) and ``lk serve`` in subprocesses. Every
  ``--probe-every``-th event is a probe: an ``add_to_cart`` by a user of its own, so its
  cart line appears in ``GET /views/cart_state?user_id=...`` exactly when the event
  became visible over HTTP.
* ``floor`` - the least any Spark + Delta speed layer pays on this machine: one bare
  Structured Streaming query (same Kafka source, same decode, same default trigger) that
  appends the decoded events to one Delta table, in this process, idempotently
  (``txnAppId``/``txnVersion``, as exactly-once requires). A probe is visible
  when the micro-batch that carries it has committed (no serving refresh, no views).

Reported per contender: p50/p95/p99 of (visible - acknowledged by Kafka) and the median
micro-batch duration; for ``lk`` also p99 over its median micro-batch.

Run: ``python -m benchmarks.freshness [--rate 5000] [--seconds 60] [--contenders lk floor]``.
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
from collections.abc import Callable
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
from kafka import KafkaProducer
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from benchmarks.producer_throughput import broker, machine
from benchmarks.recompute_vs_replay import isolated
from event_log.decode import decode_events
from event_log.kafka_source import read_stream
from event_log.schema import Event
from infra.local import free_ports
from infra.topics import ensure_topics
from lk.config import Settings
from lk.spark import build_session

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results" / "freshness.json"
PROBE_USERS = 1_000_000


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def producer_for(settings: Settings) -> KafkaProducer:
    return KafkaProducer(
        bootstrap_servers=settings.kafka.bootstrap_servers,
        acks="all",
        linger_ms=5,
        compression_type="gzip",
    )


def send_warm_up(producer: KafkaProducer, settings: Settings) -> None:
    """One probe-like event (user 1), so a contender can show it is up before the clock runs."""
    warm = Event("warm-0", "add_to_cart", 1, 1, 1, Decimal("1.00"), datetime(2026, 11, 1))
    producer.send(settings.kafka.events_topic, key=warm.key(), value=warm.to_json()).get()


def steady_stream(
    producer: KafkaProducer, settings: Settings, args: argparse.Namespace, acked: dict[int, float]
) -> int:
    """Send ``args.rate`` events/s for ``args.seconds``; record each probe's ack time."""
    start, sent = time.monotonic(), 0
    t0 = datetime(2026, 11, 1, 1)
    while (elapsed := time.monotonic() - start) < args.seconds:
        while sent < elapsed * args.rate:
            probe = sent % args.probe_every == 0
            user = PROBE_USERS + sent if probe else 2 + sent % 5_000
            event = Event(
                f"f-{sent}",
                "add_to_cart" if probe else "page_view",
                user,
                7,
                1 if probe else None,
                Decimal("1.00") if probe else None,
                t0,
            )
            future = producer.send(
                settings.kafka.events_topic, key=event.key(), value=event.to_json()
            )
            if probe:
                future.add_callback(lambda _, u=user: acked.__setitem__(u, time.time()))
            sent += 1
        time.sleep(0.001)
    producer.flush()
    return sent


def wait_until(condition: Callable[[], bool], seconds: float = 300) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not condition():
        time.sleep(1)


def run_lk(settings: Settings, args: argparse.Namespace) -> dict[str, Any]:
    """``lk speed`` + ``lk serve``; a probe is visible when the HTTP API returns its cart line."""
    port = free_ports(1)[0]
    env = {
        **os.environ,
        "LK_KAFKA__BOOTSTRAP_SERVERS": settings.kafka.bootstrap_servers,
        "LK_KAFKA__EVENTS_TOPIC": settings.kafka.events_topic,
        "LK_KAFKA__CATALOG_TOPIC": settings.kafka.catalog_topic,
        "LK_STORAGE__ROOT": settings.storage.root,
        "LK_SERVING__PORT": str(port),
        "LK_SERVING__REFRESH_INTERVAL": "250ms",
    }
    producer = producer_for(settings)
    send_warm_up(producer, settings)
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "lk.cli.app", *cmd],
            cwd=REPO,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for cmd in (["speed"], ["serve"])
    ]
    client = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=5)

    def has_cart(user: int) -> bool:
        try:
            reply = client.get("/views/cart_state", params={"user_id": user})
            return reply.status_code == 200 and bool(reply.json())
        except (httpx.HTTPError, ValueError):
            return False

    acked: dict[int, float] = {}
    seen: dict[int, float] = {}
    try:
        wait_until(lambda: has_cart(1))
        stop = threading.Event()

        def watch() -> None:
            drain_deadline = None
            while len(seen) < len(acked) or not stop.is_set():
                for user in [u for u in list(acked) if u not in seen]:
                    if has_cart(user):
                        seen[user] = time.time()
                time.sleep(0.05)
                if stop.is_set():
                    drain_deadline = drain_deadline or time.monotonic() + 120
                    if time.monotonic() > drain_deadline:
                        return

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        sent = steady_stream(producer, settings, args, acked)
        stop.set()
        watcher.join()
        status = subprocess.run(
            [sys.executable, "-m", "lk.cli.app", "status", "--json"],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
        )
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait(timeout=60)
    report = summary(sent, args, acked, seen)
    try:
        report["median_micro_batch_seconds"] = json.loads(status.stdout)["streaming"][
            "median_batch_seconds"
        ]
    except (ValueError, KeyError, TypeError):
        report["status_error"] = status.stderr[-2000:]
    return report


def run_floor(settings: Settings, args: argparse.Namespace) -> dict[str, Any]:
    """A bare query: Kafka -> decode -> append to one Delta table; visible once committed."""
    spark = build_session(settings, app_name="lk-freshness-floor")
    table = f"{settings.storage.uri()}/floor_events"
    acked: dict[int, float] = {}
    seen: dict[int, float] = {}
    durations: list[float] = []

    def append(batch: DataFrame, batch_id: int) -> None:
        started = time.perf_counter()
        batch = batch.persist()
        (
            batch.write.format("delta")
            .mode("append")
            .option("txnAppId", "freshness-floor")
            .option("txnVersion", batch_id)
            .save(table)
        )
        committed = time.time()
        durations.append(time.perf_counter() - started)
        probes = batch.where(
            (F.col("event_type") == "add_to_cart") & (F.col("user_id") >= PROBE_USERS)
        ).select("user_id")
        for row in probes.collect():
            seen.setdefault(row.user_id, committed)
        batch.unpersist()

    producer = producer_for(settings)
    send_warm_up(producer, settings)
    query = (
        decode_events(read_stream(spark, settings, settings.kafka.events_topic))
        .where(F.col("reason").isNull())
        .writeStream.foreachBatch(append)
        .option("checkpointLocation", f"{settings.storage.uri()}/_checkpoints/floor")
        .trigger(processingTime=settings.stream.trigger_interval)
        .start()
    )
    try:
        wait_until(lambda: len(durations) > 0)
        durations.clear()
        sent = steady_stream(producer, settings, args, acked)
        wait_until(lambda: len(seen) >= len(acked), seconds=120)
    finally:
        query.stop()
        spark.stop()
    report = summary(sent, args, acked, seen)
    report["median_micro_batch_seconds"] = (
        round(statistics.median(durations), 2) if durations else None
    )
    return report


def summary(
    sent: int, args: argparse.Namespace, acked: dict[int, float], seen: dict[int, float]
) -> dict[str, Any]:
    latencies = [seen[u] - acked[u] for u in acked if u in seen]
    return {
        "events_sent": sent,
        "achieved_rate": round(sent / args.seconds),
        "probes": len(acked),
        "probes_seen": len(latencies),
        "visibility_seconds": {
            "p50": round(percentile(latencies, 0.5), 2),
            "p95": round(percentile(latencies, 0.95), 2),
            "p99": round(percentile(latencies, 0.99), 2),
        }
        if latencies
        else None,
    }


CONTENDERS = {"lk": run_lk, "floor": run_floor}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=int, default=5_000)
    parser.add_argument("--seconds", type=int, default=60)
    parser.add_argument("--probe-every", type=int, default=500)
    parser.add_argument(
        "--contenders", nargs="+", choices=list(CONTENDERS), default=["lk", "floor"]
    )
    args = parser.parse_args()
    with (
        tempfile.TemporaryDirectory(prefix="lk-fresh-") as tmp,
        broker(None, Path(tmp) / "kafka") as base,
    ):
        info = machine(base)
        results: dict[str, Any] = {}
        for name in args.contenders:
            settings = isolated(base, name, Path(tmp))
            ensure_topics(settings)
            results[name] = CONTENDERS[name](settings, args)
            print(name, json.dumps(results[name]), flush=True)
    report: dict[str, Any] = {
        "benchmark": "freshness",
        "machine": info,
        "rate_target": args.rate,
        "seconds": args.seconds,
        "trigger_interval": base.stream.trigger_interval,
        "contenders": results,
    }
    lk = results.get("lk", {})
    if lk.get("visibility_seconds") and lk.get("median_micro_batch_seconds"):
        report["lk_p99_over_median_batch"] = round(
            lk["visibility_seconds"]["p99"] / lk["median_micro_batch_seconds"], 2
        )
    floor = results.get("floor", {})
    if lk.get("visibility_seconds") and floor.get("visibility_seconds"):
        report["lk_p99_over_floor_p99"] = round(
            lk["visibility_seconds"]["p99"] / floor["visibility_seconds"]["p99"], 2
        )
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(report, indent=2))
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
