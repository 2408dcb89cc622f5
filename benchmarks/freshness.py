"""Freshness: time from Kafka's acknowledgement of an event to its visibility over HTTP.

One run: a broker of its own, ``lk speed`` (Lambda, default trigger) and ``lk serve`` in
subprocesses, and a steady producer at ``--rate`` events/s for ``--seconds``. Every
``--probe-every``-th event is a probe: an ``add_to_cart`` by a user of its own, so its
cart line appears in ``GET /views/cart_state?user_id=...`` exactly when the event became
visible. Reported: p50/p95/p99 of (first seen over HTTP - acknowledged by Kafka), the
median micro-batch duration from the lane's progress log, and the ratio between them.

Run: ``python -m benchmarks.freshness [--rate 5000] [--seconds 60]``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime
from decimal import Decimal
from pathlib import Path

import httpx
from kafka import KafkaProducer

from benchmarks.producer_throughput import broker, free_port, machine
from event_log.schema import Event
from infra.topics import ensure_topics

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results" / "freshness.json"


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=int, default=5_000)
    parser.add_argument("--seconds", type=int, default=60)
    parser.add_argument("--probe-every", type=int, default=500)
    args = parser.parse_args()
    with (
        tempfile.TemporaryDirectory(prefix="lk-fresh-") as tmp,
        broker(None, Path(tmp) / "kafka") as settings,
    ):
        ensure_topics(settings)
        port = free_port()
        env = {
            **os.environ,
            "LK_KAFKA__BOOTSTRAP_SERVERS": settings.kafka.bootstrap_servers,
            "LK_STORAGE__ROOT": f"{tmp}/data",
            "LK_SERVING__PORT": str(port),
            "LK_SERVING__REFRESH_INTERVAL": "250ms",
        }
        producer = KafkaProducer(
            bootstrap_servers=settings.kafka.bootstrap_servers,
            acks="all",
            linger_ms=5,
            compression_type="gzip",
        )
        warm = Event("warm-0", "add_to_cart", 1, 1, 1, Decimal("1.00"), datetime(2026, 11, 1))
        producer.send(settings.kafka.events_topic, key=warm.key(), value=warm.to_json()).get()
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
        try:
            deadline = time.monotonic() + 300
            while time.monotonic() < deadline:
                try:
                    reply = client.get("/views/cart_state", params={"user_id": 1})
                    if reply.status_code == 200 and reply.json():
                        break
                except (httpx.HTTPError, ValueError):
                    pass
                time.sleep(1)
            acked: dict[int, float] = {}
            seen: dict[int, float] = {}
            stop = threading.Event()

            def watch() -> None:
                while not stop.is_set() or len(seen) < len(acked):
                    for user in [u for u in list(acked) if u not in seen]:
                        reply = client.get("/views/cart_state", params={"user_id": user})
                        if reply.status_code == 200 and reply.json():
                            seen[user] = time.time()
                    time.sleep(0.05)
                    if stop.is_set() and time.monotonic() > drain_deadline:
                        return

            drain_deadline = float("inf")
            watcher = threading.Thread(target=watch, daemon=True)
            watcher.start()
            start, sent = time.monotonic(), 0
            t0 = datetime(2026, 11, 1, 1)
            while (elapsed := time.monotonic() - start) < args.seconds:
                while sent < elapsed * args.rate:
                    probe = sent % args.probe_every == 0
                    user = 1_000_000 + sent if probe else 2 + sent % 5_000
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
            drain_deadline = time.monotonic() + 120
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
        latencies = [seen[u] - acked[u] for u in acked if u in seen]
        report = {
            "benchmark": "freshness",
            "machine": machine(settings),
            "rate_target": args.rate,
            "seconds": args.seconds,
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
        try:
            lane = json.loads(status.stdout)["streaming"]
            median_batch = lane["median_batch_seconds"]
            report["median_micro_batch_seconds"] = median_batch
            if latencies and median_batch:
                report["p99_over_median_batch"] = round(
                    report["visibility_seconds"]["p99"] / median_batch, 2
                )
        except (ValueError, KeyError, TypeError):
            report["status_error"] = status.stderr[-2000:]
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(json.dumps(report, indent=2))
        print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
