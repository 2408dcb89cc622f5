"""Producer throughput: ``lk produce`` vs a bare kafka-python loop vs Kafka's own Java tool.

One run, one broker, the same record size, the same producer settings (``acks=all``,
idempotence, ``linger.ms``, ``batch.size``, compression from the configuration)::

    python -m benchmarks.producer_throughput [--events N] [--repeats R] [--bootstrap HOST:PORT]

Contenders (each on fresh topics, interleaved over the repeats, median reported):

* ``lk produce``: ``produce(settings, workload(spec))``, the exact call the CLI makes,
  timed end to end *including* generating the workload (what a user waits for; large
  workloads are generated in a child process, overlapping the sends).
* ``kafka-python loop``: the same records, generated beforehand, sent with a plain
  ``KafkaProducer`` + ``send()`` loop + ``flush()``.
* ``java ProducerPerformance``: ``org.apache.kafka.tools.ProducerPerformance`` from the
  fetched jars with ``--record-size`` = the workload's average value size (it repeats one
  random A-Z payload, which compresses better than real events).
* ``java ProducerPerformance (payload file)``: the same tool drawing values at random from
  the workload's real values (``--payload-file``), so compression sees real data.

Rates are records per second (events, their re-sends, junk and catalog changes; every
contender sends the same number of records). MB/s counts record values, 10^6 bytes.
"CPU us/record" is the user + system CPU of this process and the children it reaped
during the run (``lk produce``: including its generator process; Java: the whole JVM,
start-up and JIT included), per record; the broker's CPU is not in it. On a shared
machine wall-clock rates move with the load; CPU per record much less so.
Without ``--bootstrap`` the script runs its own broker on free ports in a temp dir.
Results go to ``benchmarks/results/producer_throughput.json``; a markdown table is printed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from uuid import uuid4

from kafka import KafkaAdminClient, KafkaProducer

from config.settings import Settings
from event_log.topics import end_offsets, ensure_topics
from infra.jars import kafka_classpath
from measure.machine import broker, machine
from workload.generator import Record, WorkloadSpec, generate, workload
from workload.producer import produce

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results" / "producer_throughput.json"
LK, BARE, JAVA, JAVA_FILE = (
    "lk produce",
    "kafka-python loop",
    "java ProducerPerformance",
    "java ProducerPerformance (payload file)",
)
_SUMMARY = re.compile(
    r"(?P<records>\d+) records sent, (?P<rate>[\d.]+) records/sec \((?P<mb>[\d.]+) MB/sec\), "
    r"(?P<avg>[\d.]+) ms avg latency, (?P<max>[\d.]+) ms max latency"
)


@dataclass
class Run:
    """One timed run of one contender."""

    records: int
    seconds: float
    value_bytes: int
    cpu_seconds: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def rate(self) -> float:
        return self.records / self.seconds

    @property
    def mb_per_s(self) -> float:
        return self.value_bytes / self.seconds / 1e6

    @property
    def cpu_us_per_record(self) -> float:
        return self.cpu_seconds / self.records * 1e6


@dataclass(frozen=True)
class Workload:
    """The generated workload the Python loop replays and the Java tool imitates."""

    spec: WorkloadSpec
    records: list[Record]
    value_bytes: int
    payload_file: Path

    @property
    def avg_value_size(self) -> int:
        return round(self.value_bytes / len(self.records))


def with_kafka(settings: Settings, **fields: Any) -> Settings:
    """Copy frozen Settings with some ``kafka`` fields changed."""
    return settings.model_copy(update={"kafka": settings.kafka.model_copy(update=fields)})


def fresh_topics(settings: Settings, label: str, created: list[str]) -> Settings:
    """Settings whose events/catalog topics are new, empty and created now."""
    suffix = f"{label}_{uuid4().hex[:8]}"
    mine = with_kafka(
        settings, events_topic=f"bench_events_{suffix}", catalog_topic=f"bench_catalog_{suffix}"
    )
    created += ensure_topics(mine)
    return mine


def logged(settings: Settings, *topics: str) -> int:
    """How many records the topics hold (all of them were empty before the run)."""
    return sum(sum(end_offsets(settings, topic).values()) for topic in topics)


def run_lk(settings: Settings, work: Workload) -> Run:
    started = time.perf_counter()
    report = produce(settings, workload(work.spec))
    seconds = time.perf_counter() - started
    if report.failed or report.acknowledged != report.sent:
        raise RuntimeError(f"lk produce lost records: {report.as_dict()}")
    extra = {"report_seconds": round(report.seconds, 3)}
    return Run(report.sent, seconds, work.value_bytes, extra=extra)


def run_bare(settings: Settings, work: Workload) -> Run:
    kafka = settings.kafka
    topics = {"events": kafka.events_topic, "catalog": kafka.catalog_topic}
    started = time.perf_counter()
    producer = KafkaProducer(
        bootstrap_servers=kafka.bootstrap_servers.split(","),
        acks="all",
        enable_idempotence=True,
        linger_ms=kafka.producer_linger_ms,
        batch_size=kafka.producer_batch_size,
        compression_type=None
        if kafka.producer_compression == "none"
        else kafka.producer_compression,
        max_in_flight_requests_per_connection=5,
    )
    send = producer.send
    for record in work.records:
        send(topics[record.topic], key=record.key, value=record.value)
    producer.flush()
    producer.close()
    return Run(len(work.records), time.perf_counter() - started, work.value_bytes)


def run_java(settings: Settings, work: Workload, *, payload_file: bool) -> Run:
    kafka = settings.kafka
    source = (
        ["--payload-file", str(work.payload_file)]
        if payload_file
        else ["--record-size", str(work.avg_value_size)]
    )
    cmd = [
        "java",
        "-Xms256m",
        "-Xmx1g",
        "-Duser.language=en",
        "-Duser.country=US",
        "-cp",
        kafka_classpath(settings),
        "org.apache.kafka.tools.ProducerPerformance",
        "--topic",
        kafka.events_topic,
        "--num-records",
        str(len(work.records)),
        *source,
        "--throughput",
        "-1",
        "--producer-props",
        f"bootstrap.servers={kafka.bootstrap_servers}",
        "acks=all",
        "enable.idempotence=true",
        f"linger.ms={kafka.producer_linger_ms}",
        f"batch.size={kafka.producer_batch_size}",
        f"compression.type={kafka.producer_compression}",
        "max.in.flight.requests.per.connection=5",
    ]
    started = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    summary = list(_SUMMARY.finditer(done.stdout))
    if done.returncode != 0 or not summary:
        raise RuntimeError(
            f"ProducerPerformance failed (exit {done.returncode}):\n"
            f"{(done.stdout + done.stderr)[-3000:]}"
        )
    last = summary[-1]
    records = int(last["records"])
    seconds = records / float(last["rate"])
    size = work.avg_value_size if not payload_file else work.value_bytes / len(work.records)
    return Run(
        records,
        seconds,
        round(records * size),
        extra={
            "summary": last.group(0),
            "tool_mb_per_s": float(last["mb"]),
            "avg_latency_ms": float(last["avg"]),
            "max_latency_ms": float(last["max"]),
            "process_wall_seconds": round(wall, 3),
        },
    )


def make_workload(spec: WorkloadSpec, workdir: Path) -> Workload:
    records = list(generate(spec))
    values = [r.value for r in records if r.value is not None]
    payload_file = workdir / f"payloads-{spec.events}.txt"
    payload_file.write_bytes(b"\n".join(values) + b"\n")
    return Workload(spec, records, sum(len(v) for v in values), payload_file)


Contender = Callable[[Settings, Workload], Run]
CONTENDERS: dict[str, tuple[str, Contender]] = {
    LK: ("lk", run_lk),
    BARE: ("bare", run_bare),
    JAVA: ("java", lambda s, w: run_java(s, w, payload_file=False)),
    JAVA_FILE: ("javafile", lambda s, w: run_java(s, w, payload_file=True)),
}


def cpu_seconds() -> float:
    """CPU time of this process and of its reaped children (generator, JVM), user + system."""
    mine = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return mine.ru_utime + mine.ru_stime + children.ru_utime + children.ru_stime


def run_one(settings: Settings, name: str, work: Workload, created: list[str]) -> Run:
    label, contender = CONTENDERS[name]
    mine = fresh_topics(settings, label, created)
    cpu = cpu_seconds()
    run = contender(mine, work)
    run.cpu_seconds = cpu_seconds() - cpu
    stored = logged(mine, mine.kafka.events_topic, mine.kafka.catalog_topic)
    if stored != run.records:
        raise RuntimeError(f"{name}: {run.records} records reported but {stored} stored")
    return run


def summarize(runs: list[Run]) -> dict[str, Any]:
    rates = [r.rate for r in runs]
    median = statistics.median(rates)
    return {
        "records": runs[0].records,
        "events_per_s": round(median, 1),
        "mb_per_s": round(statistics.median(r.mb_per_s for r in runs), 3),
        "seconds_median": round(statistics.median(r.seconds for r in runs), 3),
        "cpu_us_per_record": round(statistics.median(r.cpu_us_per_record for r in runs), 1),
        "repeats_events_per_s": [round(r, 1) for r in rates],
        "repeats_seconds": [round(r.seconds, 3) for r in runs],
        "repeats_extra": [r.extra for r in runs if r.extra],
    }


def markdown(result: dict[str, Any]) -> str:
    contenders = result["contenders"]
    bare = contenders[BARE]["events_per_s"]
    lines = [
        "| contender | records/s (median) | MB/s | repeats (records/s) | CPU us/record "
        "| vs kafka-python loop |",
        "|---|---:|---:|---|---:|---:|",
    ]
    for name, row in contenders.items():
        repeats = ", ".join(f"{r:,.0f}" for r in row["repeats_events_per_s"])
        lines.append(
            f"| {name} | {row['events_per_s']:,.0f} | {row['mb_per_s']:.1f} | {repeats} | "
            f"{row['cpu_us_per_record']:.0f} | {row['events_per_s'] / bare:.2f} |"
        )
    m = result["machine"]
    w = result["workload"]
    lines += [
        "",
        f"{w['records']:,} records ({w['events']:,} events, seed {w['seed']}), "
        f"average value {w['avg_value_bytes']} B; {result['repeats']} repeats, "
        f"{result['producer']}.",
        f"Machine: {m['cpu_count']} CPUs ({m['cpu_model']}), Python {m['python']}, "
        f"{m['java']}, kafka-python {m['kafka_python']}, Kafka clients {m['kafka_java_clients']}, "
        f"load average at start {m['load_average_at_start']}, {m['date']}.",
        f"Ratios: lk/bare = {result['ratios']['lk_over_bare']:.2f}, "
        f"lk/java = {result['ratios']['lk_over_java']:.2f}, "
        f"lk/java (payload file) = {result['ratios']['lk_over_java_payload_file']:.2f} "
        f"(target lk/bare >= {result['target_lk_over_bare']}).",
    ]
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=200_000, help="events in the workload")
    parser.add_argument("--repeats", type=int, default=3, help="runs per contender (median)")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--bootstrap", help="use this broker instead of starting one")
    parser.add_argument("--warmup-events", type=int, default=20_000, help="0 skips warm-up")
    parser.add_argument("--output", type=Path, default=RESULTS)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    with (
        tempfile.TemporaryDirectory(prefix="lk-bench-") as tmp,
        broker(args.bootstrap, Path(tmp) / "kafka") as settings,
    ):
        created: list[str] = []
        try:
            return _benchmark(args, settings, Path(tmp), created)
        finally:
            if created and args.bootstrap:
                admin = KafkaAdminClient(bootstrap_servers=settings.kafka.bootstrap_servers)
                try:
                    admin.delete_topics(created)
                finally:
                    admin.close()


def _benchmark(
    args: argparse.Namespace, settings: Settings, tmp: Path, created: list[str]
) -> dict[str, Any]:
    about = machine(settings)
    if args.warmup_events:
        warm = make_workload(WorkloadSpec(events=args.warmup_events, seed=args.seed + 1), tmp)
        for name in CONTENDERS:
            print(f"warm-up: {name}", file=sys.stderr)
            run_one(settings, name, warm, created)
    work = make_workload(WorkloadSpec(events=args.events, seed=args.seed), tmp)
    runs: dict[str, list[Run]] = {name: [] for name in CONTENDERS}
    names = list(CONTENDERS)
    for repeat in range(args.repeats):
        order = names[repeat % len(names) :] + names[: repeat % len(names)]
        for name in order:
            run = run_one(settings, name, work, created)
            runs[name].append(run)
            print(
                f"repeat {repeat + 1}/{args.repeats} {name}: {run.records:,} records in "
                f"{run.seconds:.2f} s = {run.rate:,.0f} records/s",
                file=sys.stderr,
            )
    contenders = {name: summarize(runs[name]) for name in CONTENDERS}
    rate = {name: row["events_per_s"] for name, row in contenders.items()}
    kafka = settings.kafka
    result = {
        "benchmark": "producer_throughput",
        "command": "python -m benchmarks.producer_throughput "
        f"--events {args.events} --repeats {args.repeats}",
        "machine": {**about, "load_average_at_end": [round(x, 2) for x in os.getloadavg()]},
        "workload": {
            "events": args.events,
            "seed": args.seed,
            "records": len(work.records),
            "avg_value_bytes": work.avg_value_size,
            "value_bytes": work.value_bytes,
        },
        "producer": f"acks=all, idempotent, linger.ms={kafka.producer_linger_ms}, "
        f"batch.size={kafka.producer_batch_size}, compression={kafka.producer_compression}",
        "repeats": args.repeats,
        "contenders": contenders,
        "ratios": {
            "lk_over_bare": round(rate[LK] / rate[BARE], 3),
            "lk_over_java": round(rate[LK] / rate[JAVA], 3),
            "lk_over_java_payload_file": round(rate[LK] / rate[JAVA_FILE], 3),
            "bare_over_java": round(rate[BARE] / rate[JAVA], 3),
        },
        "target_lk_over_bare": 0.8,
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(result, indent=2) + "\n")
    print(markdown(result))
    print(f"\nwrote {args.output}", file=sys.stderr)
    return result


if __name__ == "__main__":
    main()
