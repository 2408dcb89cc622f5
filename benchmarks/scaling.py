"""The cost of scaling out on one machine: batch recompute and Kappa replay, side by side.

One workload is loaded into one topic; then each configuration runs the Lambda batch run
(``run_batch``: read the log, land bronze, recompute every view, check, publish) and the
Kappa replay (``kappa.reprocess`` from offset 0) on a storage root of its own:

====================  =======================================================
``local[2]``          one JVM, two task threads (the default)
``1 worker``          a standalone master and one worker of 1 core (one executor)
``2 workers``         the same with two workers of 1 core each
====================  =======================================================

each over the local disk and over the object store (SeaweedFS through S3A). Every
configuration runs in a child process (one SparkSession per process, its master and jars
fixed at start) configured by ``LK_*`` alone, as a user's would be.

This machine has 2 cores: the figures show what going distributed *costs* here (executor
start-up, task scheduling and shuffles over loopback, S3 round trips instead of a local
rename), not a speed-up. ``events_per_s_per_core`` is the figure to extrapolate from.

Run: ``python -m benchmarks.scaling [--events 1000000] [--output F]`` (``make
bench-scaling``). It starts a broker, the object store and the Spark cluster of its own on
free ports under a temp folder, and stops them all on exit.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from config.settings import Settings, load_settings, with_sections
from infra import object_store, spark_cluster
from infra.local import free_ports, free_run
from measure.machine import broker, machine

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results" / "scaling.json"
BUCKET = "lk-bench"
CONFIGS = ("local[2]", "1 worker", "2 workers")
STORES = ("local disk", "object store")


def _spec(events: int) -> Any:
    from workload.generator import WorkloadSpec

    return WorkloadSpec(events=events, seed=7, users=20_000, products=2_000)


@contextmanager
def _object_store(settings: Settings, home: Path) -> Iterator[Settings]:
    port = free_run(4, offsets=(0, 10_000))
    mine = with_sections(
        settings,
        storage={
            "endpoint": f"http://127.0.0.1:{port}",
            "server_home": home,
            "server_port": port,
            "jars_dir": REPO / ".lk/jars/s3",
        },
    )
    object_store.up(mine)
    object_store.ensure_bucket(mine, BUCKET)
    try:
        yield mine
    finally:
        object_store.down(mine)


def _env(settings: Settings, master: str, root: str) -> dict[str, str]:
    """The ``LK_*`` a child runs with: the topic, the master, the storage root and store."""
    storage, spark = settings.storage, settings.spark
    env = {
        "LK_KAFKA__BOOTSTRAP_SERVERS": settings.kafka.bootstrap_servers,
        "LK_KAFKA__EVENTS_TOPIC": settings.kafka.events_topic,
        "LK_KAFKA__CATALOG_TOPIC": settings.kafka.catalog_topic,
        "LK_SPARK__MASTER": master,
        "LK_SPARK__JARS_DIR": str(spark.jars_dir),
        "LK_SPARK__LOG_DIR": str(spark.log_dir),
        "LK_SPARK__EXECUTOR_MEMORY": spark.executor_memory,
        "LK_STORAGE__ROOT": root,
        "LK_STORAGE__JARS_DIR": str(storage.jars_dir),
        "LK_STORAGE__SERVER_HOME": str(storage.server_home),
        "LK_STORAGE__SERVER_PORT": str(storage.server_port),
    }
    if storage.endpoint:
        env["LK_STORAGE__ENDPOINT"] = storage.endpoint
    return env


def child() -> dict[str, Any]:
    """In a child: time the session start, one batch run and one Kappa replay."""
    from batch_layer.job import run_batch
    from designs.kappa.reprocess import reprocess
    from designs.platform import build
    from lake.spark import build_session

    settings = load_settings()
    started = time.perf_counter()
    spark = build_session(settings, app_name="lk-bench-scaling")
    session_s = time.perf_counter() - started
    started = time.perf_counter()
    run = run_batch(spark, settings, build(settings).registry).run
    batch_s = time.perf_counter() - started
    kappa = settings.model_copy(update={"mode": "kappa"})
    started = time.perf_counter()
    reprocess(spark, kappa, build(kappa).registry)
    replay_s = time.perf_counter() - started
    spark.stop()
    return {
        "session_start_s": round(session_s, 1),
        "batch_s": round(batch_s, 1),
        "replay_s": round(replay_s, 1),
        "bronze_rows": run.bronze_rows,
    }


def _run_child(settings: Settings, master: str, root: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.scaling", "--child"],
        cwd=REPO,
        env={**os.environ, **_env(settings, master, root)},
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"child on {master} / {root} failed:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _figures(result: dict[str, Any], events: int, cores: int) -> dict[str, Any]:
    per = {
        f"{step}_events_per_s": round(events / result[f"{step}_s"])
        for step in ("batch", "replay")
        if result[f"{step}_s"] > 0
    }
    per_core = {f"{k}_per_core": round(v / cores) for k, v in per.items()}
    return {**result, "cores": cores, **per, **per_core}


def run(events: int, workdir: Path) -> dict[str, Any]:
    """Load the workload once, then every configuration x store, one after the other."""
    from event_log.topics import ensure_topics
    from workload.generator import generate
    from workload.producer import produce

    rows: list[dict[str, Any]] = []
    with ExitStack() as stack:
        settings = stack.enter_context(broker(None, workdir / "kafka"))
        described = machine(settings)  # before the load: its load average is the start's
        settings = with_sections(
            settings,
            kafka={"events_topic": "events_scaling", "catalog_topic": "catalog_scaling"},
            spark={
                "log_dir": workdir / "logs",
                "cluster_home": workdir / "spark",
                "worker_cores": 1,
                "worker_memory": "3g",
                "executor_memory": "2g",
            },
        )
        ensure_topics(settings)
        report = produce(settings, list(generate(_spec(events))))
        assert report.failed == 0, report.as_dict()
        settings = stack.enter_context(_object_store(settings, workdir / "s3"))
        master, ui = free_ports(2)
        settings = with_sections(
            settings,
            spark={"master_port": master, "master_ui_port": ui, "worker_ui_port": free_run(2)},
        )
        stack.callback(spark_cluster.down, settings)
        for config in CONFIGS:
            workers = CONFIGS.index(config)
            if workers:
                spark_cluster.up(settings, workers)
            target = spark_cluster.master_url(settings) if workers else "local[2]"
            for store in STORES:
                label = f"{config.replace(' ', '_').replace('[2]', '2')}_{store.split()[-1]}"
                root = (
                    f"s3a://{BUCKET}/{label}" if store == "object store" else str(workdir / label)
                )
                print(f"{config} on {store} ...", file=sys.stderr, flush=True)
                result = _run_child(settings, target, root)
                rows.append(
                    {"config": config, "store": store, **_figures(result, events, workers or 2)}
                )
                print(f"  {rows[-1]}", file=sys.stderr, flush=True)
    return {
        "benchmark": "scaling",
        "events": events,
        "note": (
            "2 cores: a cluster here shows the cost of going distributed, not a speed-up; "
            "extrapolate from the per-core figures"
        ),
        "machine": described,
        "results": rows,
    }


def main() -> None:
    """Run the benchmark (or, with ``--child``, one configuration in this process)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--output", type=Path, default=RESULTS)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child()))
        return
    with tempfile.TemporaryDirectory(prefix="lk-scaling-") as folder:
        result = run(args.events, Path(folder))
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
