"""Serving latency: point queries against ``lk serve`` over real HTTP on loopback.

::

    python -m benchmarks.serving_latency [--events N] [--queries Q] [--spark-queries S]

Steps: start a broker on free ports in a temp dir, produce the workload (default 10k
events), run one batch, start ``lk serve`` in a subprocess on ``127.0.0.1`` (its own
SparkSession, built once, loads the views in the background), wait until ``/health``
says the views are loaded, then send ``Q`` point queries, one at a time over one
keep-alive ``httpx`` connection: ``GET /views/{view}?<key columns>=<values>`` for
random rows of all five views, round robin. Latency is the client-side wall time of
one request (send, server work, receive the body); percentiles are over all queries.

For contrast, ``S`` of the same point queries are also answered the way ``lk query``
does it (``read_view`` + filter + ``collect`` on a SparkSession that is already warm).
Target: p99 < 50 ms for the HTTP point query.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from functools import reduce
from importlib.metadata import version
from pathlib import Path
from typing import Any

import httpx
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from batch_layer.job import run_batch
from config.settings import Settings
from designs.platform import build
from event_log.topics import ensure_topics
from infra.local import free_ports
from infra.processes import stop_child
from lake.spark import build_session
from measure.machine import broker, machine
from measure.stats import percentile
from serving_layer.snapshot import ColumnInfo
from workload.generator import WorkloadSpec, workload
from workload.producer import produce

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results" / "serving_latency.json"
DOCS = REPO / "docs" / "benchmarks.md"
SECTION = "## Serving latency"
TARGET_P99_MS = 50.0

Query = tuple[str, dict[str, str]]


def percentiles(samples_ms: list[float]) -> dict[str, float]:
    """``measure.stats`` percentiles, in milliseconds, with the mean."""
    return {
        **{f"p{q}_ms": round(percentile(samples_ms, q / 100), 3) for q in (50, 95, 99)},
        "mean_ms": round(statistics.fmean(samples_ms), 3),
        "max_ms": round(max(samples_ms), 3),
        "n": len(samples_ms),
    }


def serve_env(settings: Settings) -> dict[str, str]:
    """The environment that makes ``lk serve`` read this run's storage."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("LK_")}
    return env | {
        "LK_MODE": settings.mode,
        "LK_STORAGE__ROOT": settings.storage.root,
        "LK_SPARK__JARS_DIR": str(settings.spark.jars_dir),
        "LK_KAFKA__BOOTSTRAP_SERVERS": settings.kafka.bootstrap_servers,
        "LK_BROKER__JARS_DIR": str(settings.broker.jars_dir),
        "LK_WATCHDOG__HOME": f"{settings.storage.root}/_run",  # lk serve's PID file
    }


@contextmanager
def api_server(settings: Settings, port: int, log_file: Path) -> Iterator[subprocess.Popen]:
    """``lk serve`` in a subprocess (stopped on exit)."""
    cmd = [sys.executable, "-c", "from lk.cli.app import main; main()", "serve"]
    cmd += ["--host", "127.0.0.1", "--port", str(port)]
    with log_file.open("wb") as log:
        proc = subprocess.Popen(
            cmd, cwd=REPO, env=serve_env(settings), stdout=log, stderr=subprocess.STDOUT
        )
        try:
            yield proc
        finally:
            stop_child(proc, timeout_s=60)


def wait_ready(
    client: httpx.Client, proc: subprocess.Popen, log_file: Path, timeout: float
) -> dict:
    """Poll ``/health`` until it says ok (bounded by ``timeout`` seconds)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(
                f"lk serve exited ({proc.returncode}):\n{log_file.read_text()[-3000:]}"
            )
        try:
            response = client.get("/health")
            if response.status_code == 200:
                return response.json()
        except httpx.TransportError:
            pass
        time.sleep(0.25)
    raise TimeoutError(f"lk serve not ready after {timeout} s:\n{log_file.read_text()[-3000:]}")


def point_queries(client: httpx.Client, count: int, seed: int) -> list[Query]:
    """``count`` full-key queries on random rows of every view, round robin over views."""
    rng = random.Random(seed)
    per_view: dict[str, list[dict[str, str]]] = {}
    for info in client.get("/views").json():
        rows = client.get(f"/views/{info['name']}").json()
        picks = [rng.choice(rows) for _ in range(count // 5 + 1)]
        per_view[info["name"]] = [{k: str(row[k]) for k in info["key"]} for row in picks]
    names = list(per_view)
    return [(names[i % len(names)], per_view[names[i % len(names)]][i // len(names)])
            for i in range(count)]  # fmt: skip


def time_http(client: httpx.Client, queries: list[Query]) -> list[float]:
    """Latency of each query in ms; every answer must be exactly one row."""
    samples: list[float] = []
    answers: list[httpx.Response] = []
    for name, params in queries:
        started = time.perf_counter()
        response = client.get(f"/views/{name}", params=params)
        samples.append((time.perf_counter() - started) * 1000)
        answers.append(response)
    for (name, params), response in zip(queries, answers, strict=True):
        if response.status_code != 200 or len(response.json()) != 1:
            raise RuntimeError(f"{name} {params}: {response.status_code} {response.text[:300]}")
    return samples


def time_spark(spark: SparkSession, settings: Settings, queries: list[Query]) -> list[float]:
    """Latency of each query answered like ``lk query`` (Spark per request), in ms."""
    samples: list[float] = []
    for name, params in queries:
        started = time.perf_counter()
        frame = build(settings).read(spark, name)
        columns = {f.name: ColumnInfo.of(f.name, f.dataType) for f in frame.schema.fields}
        condition = reduce(
            lambda a, b: a & b, [F.col(c) == columns[c].value(v) for c, v in params.items()]
        )
        rows = frame.where(condition).collect()
        samples.append((time.perf_counter() - started) * 1000)
        if len(rows) != 1:
            raise RuntimeError(f"spark {name} {params}: {len(rows)} rows")
    return samples


def time_cli(settings: Settings, port: int, queries: list[Query]) -> list[float]:
    """Wall time of ``lk query VIEW --filter ...`` from the shell (a process each), in ms.

    ``lk serve`` runs, so the command asks it over HTTP instead of starting Spark.
    """
    env = serve_env(settings) | {"LK_SERVING__PORT": str(port)}
    samples: list[float] = []
    for name, params in queries:
        filters = [arg for c, v in params.items() for arg in ("--filter", f"{c}={v}")]
        cmd = [sys.executable, "-m", "lk.cli.app", "query", name, *filters, "--format", "json"]
        started = time.perf_counter()
        done = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True)
        samples.append((time.perf_counter() - started) * 1000)
        if done.returncode != 0 or len(done.stdout.splitlines()) != 1:
            raise RuntimeError(f"lk query {name} {params}: {done.stderr[-1000:]}")
    return samples


def markdown(result: dict[str, Any]) -> str:
    http = result["http_point_query"]
    lines = [
        SECTION,
        "",
        f"`python -m benchmarks.serving_latency`: {http['overall']['n']:,} point queries "
        f"(full key, one row each) against `lk serve` over HTTP on loopback, one at a time on "
        f"one keep-alive connection, round robin over the five views; workload "
        f"{result['workload']['events']:,} events, one batch run. Then `lk query` from the "
        f"shell with `lk serve` running, and Spark per request (`lk query` with no server).",
        "",
        "| path | p50 ms | p95 ms | p99 ms | mean ms | max ms | queries |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]

    def row(label: str, stats: dict[str, float]) -> str:
        return (
            f"| {label} | {stats['p50_ms']:.2f} | {stats['p95_ms']:.2f} | {stats['p99_ms']:.2f} "
            f"| {stats['mean_ms']:.2f} | {stats['max_ms']:.2f} | {stats['n']:,} |"
        )

    lines.append(row("HTTP API, all views", http["overall"]))
    for name, stats in http["per_view"].items():
        lines.append(row(f"HTTP API, {name}", stats))
    if result.get("cli_query"):
        lines.append(row("`lk query` from the shell, lk serve running", result["cli_query"]))
    if result.get("spark_per_request"):
        spark = result["spark_per_request"]
        lines.append(row("Spark per request (`lk query` without lk serve)", spark))
    m = result["machine"]
    lines += [
        "",
        f"Target p99 < {result['target_p99_ms']:.0f} ms: "
        f"{'met' if result['target_met'] else 'NOT met'}. The API answered from memory; "
        f"it was ready {result['server_ready_seconds']:.1f} s after start (SparkSession + "
        f"first load of {sum(result['served_rows'].values()):,} rows).",
        f"Machine: {m['cpu_count']} CPUs ({m['cpu_model']}), Python {m['python']}, {m['java']}, "
        f"PySpark {m['pyspark']}, FastAPI {m['fastapi']}, uvicorn {m['uvicorn']}, "
        f"load average at start {m['load_average_at_start']}, {m['date']}. Raw data: "
        "[`serving_latency.json`](../benchmarks/results/serving_latency.json).",
        "",
        "**What limits it.** The API answers from memory, so its tail is the machine's load. "
        "`lk query`'s time from the shell is mostly Python's start-up and importing the "
        "typed configuration.",
        "",
    ]
    return "\n".join(lines)


def update_docs(path: Path, section: str) -> None:
    """Replace this benchmark's section of ``path`` or append it; other sections stay."""
    text = path.read_text() if path.exists() else "# Benchmarks\n"
    if SECTION in text:
        start = text.index(SECTION)
        end = text.find("\n## ", start + len(SECTION))
        text = text[:start] + section + ("" if end == -1 else text[end + 1 :])
    else:
        text = text.rstrip("\n") + "\n\n" + section
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=10_000, help="events in the workload")
    parser.add_argument("--queries", type=int, default=2_000, help="timed HTTP point queries")
    parser.add_argument("--warmup", type=int, default=200, help="untimed HTTP queries first")
    parser.add_argument("--spark-queries", type=int, default=20, help="0 skips the contrast")
    parser.add_argument("--cli-queries", type=int, default=20, help="`lk query` runs, timed")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--ready-timeout", type=float, default=600.0)
    parser.add_argument("--output", type=Path, default=RESULTS)
    parser.add_argument("--docs", type=Path, default=DOCS)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    with (
        tempfile.TemporaryDirectory(prefix="lk-bench-serving-") as tmp,
        broker(None, Path(tmp) / "kafka") as base,
    ):
        spark_section = base.spark.model_copy(update={"jars_dir": REPO / ".lk/jars/spark"})
        settings = base.model_copy(update={"spark": spark_section})
        return _benchmark(args, settings, Path(tmp))


def _benchmark(args: argparse.Namespace, settings: Settings, tmp: Path) -> dict[str, Any]:
    about = machine(settings) | {
        "pyspark": version("pyspark"),
        "delta_spark": version("delta-spark"),
        "fastapi": version("fastapi"),
        "uvicorn": version("uvicorn"),
        "httpx": version("httpx"),
    }
    ensure_topics(settings)
    spec = WorkloadSpec(events=args.events, seed=args.seed)
    report = produce(settings, workload(spec))
    print(f"produced {report.sent:,} records", file=sys.stderr)
    spark = build_session(settings, app_name="lk-bench-serving")
    started = time.perf_counter()
    batch = run_batch(spark, settings, build(settings).registry)
    batch_seconds = time.perf_counter() - started
    print(f"batch run {batch.run.run_id} in {batch_seconds:.1f} s", file=sys.stderr)

    port = free_ports(1)[0]
    log_file = tmp / "serve.log"
    started = time.perf_counter()
    with (
        api_server(settings, port, log_file) as proc,
        httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30.0) as client,
    ):
        health = wait_ready(client, proc, log_file, args.ready_timeout)
        ready_seconds = time.perf_counter() - started
        print(f"lk serve ready in {ready_seconds:.1f} s: {health['source']}", file=sys.stderr)
        queries = point_queries(client, args.warmup + args.queries, args.seed)
        time_http(client, queries[: args.warmup])
        timed = queries[args.warmup :]
        samples = time_http(client, timed)
        cli_samples = time_cli(settings, port, timed[: args.cli_queries])
    by_view: dict[str, list[float]] = {}
    for (name, _), ms in zip(timed, samples, strict=True):
        by_view.setdefault(name, []).append(ms)
    overall = percentiles(samples)
    http = {
        "overall": overall,
        "per_view": {name: percentiles(ms) for name, ms in by_view.items()},
    }
    print(f"HTTP point query: {overall}", file=sys.stderr)
    spark_stats = None
    if args.spark_queries:
        spark_samples = time_spark(spark, settings, timed[: args.spark_queries])
        spark_stats = percentiles(spark_samples) if len(spark_samples) > 1 else None
        print(f"Spark per request: {spark_stats}", file=sys.stderr)
    spark.stop()

    result = {
        "benchmark": "serving_latency",
        "command": f"python -m benchmarks.serving_latency --events {args.events} "
        f"--queries {args.queries} --spark-queries {args.spark_queries}",
        "machine": {**about, "load_average_at_end": [round(x, 2) for x in os.getloadavg()]},
        "workload": {"events": args.events, "seed": args.seed, "records": report.sent},
        "batch_seconds": round(batch_seconds, 1),
        "server_ready_seconds": round(ready_seconds, 1),
        "serving_source": health["source"],
        "served_rows": {name: v["rows"] for name, v in health["views"].items()},
        "warmup_queries": args.warmup,
        "http_point_query": http,
        "spark_per_request": spark_stats,
        "cli_query": percentiles(cli_samples) if len(cli_samples) > 1 else None,
        "target_p99_ms": TARGET_P99_MS,
        "target_met": overall["p99_ms"] < TARGET_P99_MS,
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(result, indent=2) + "\n")
    section = markdown(result)
    update_docs(args.docs, section)
    print(section)
    print(f"wrote {args.output} and the '{SECTION}' section of {args.docs}", file=sys.stderr)
    return result


if __name__ == "__main__":
    main()
