"""The scale-out pieces for tests: an object store and a Spark cluster of their own, on free
ports under a temp folder, and a scenario run in a child configured by ``LK_*`` alone."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from uuid import uuid4

from config.settings import Settings, with_sections
from infra import object_store, spark_cluster
from infra.local import free_ports, free_run
from tests.conftest import REPO
from tests.support.env import lk_env

BUCKET = "lk-tests"


@contextmanager
def local_object_store(settings: Settings, home: Path) -> Iterator[Settings]:
    """SeaweedFS under ``home`` on free ports; ``settings`` with storage under ``s3a://``."""
    port = free_run(4, offsets=(0, 10_000))
    mine = with_sections(
        settings,
        storage={
            "root": f"s3a://{BUCKET}/{uuid4().hex[:8]}",
            "endpoint": f"http://127.0.0.1:{port}",
            "server_home": home,
            "server_port": port,
            "jars_dir": REPO / ".lk/jars/s3",
        },
    )
    object_store.up(mine)
    try:
        yield mine
    finally:
        object_store.down(mine)


@contextmanager
def local_spark_cluster(settings: Settings, home: Path, workers: int) -> Iterator[Settings]:
    """A master and ``workers`` workers under ``home`` on free ports; ``settings`` using it."""
    master, master_ui = free_ports(2)
    worker_ui = free_run(workers)
    mine = with_sections(
        settings,
        spark={
            "cluster_home": home,
            "master_port": master,
            "master_ui_port": master_ui,
            "worker_ui_port": worker_ui,
            "worker_cores": 1,
            "worker_memory": "1g",
            "executor_memory": "768m",
        },
    )
    mine = with_sections(mine, spark={"master": spark_cluster.master_url(mine)})
    spark_cluster.up(mine, workers)
    try:
        yield mine
    finally:
        spark_cluster.down(mine)


def scenario_env(settings: Settings) -> dict[str, str]:
    """``LK_*`` for a child: the test's broker and topics, storage, Spark master, ports."""
    storage, spark = settings.storage, settings.spark
    env = lk_env(
        settings,
        LK_SPARK__MASTER=spark.master,
        LK_SPARK__LOG_DIR=str(spark.log_dir),
        LK_SPARK__CLASS_ARCHIVE_DIR=str(spark.class_archive_dir),
        LK_SPARK__EXECUTOR_MEMORY=spark.executor_memory,
        LK_SPARK__CLUSTER_HOME=str(spark.cluster_home),
        LK_SPARK__MASTER_PORT=str(spark.master_port),
        LK_SPARK__MASTER_UI_PORT=str(spark.master_ui_port),
        LK_KAFKA__REPLICATION_FACTOR=str(settings.kafka.replication_factor),
        LK_KAFKA__MIN_INSYNC_REPLICAS=str(settings.kafka.min_insync_replicas),
        LK_STORAGE__JARS_DIR=str(storage.jars_dir),
        LK_STORAGE__SERVER_HOME=str(storage.server_home),
        LK_STORAGE__SERVER_PORT=str(storage.server_port),
    )
    if storage.endpoint:
        env["LK_STORAGE__ENDPOINT"] = storage.endpoint
    env["LK_WATCHDOG__HOME"] = str(settings.watchdog.home)
    return env


def run_scenario(
    name: str, settings: Settings, timeout: float = 900
) -> subprocess.CompletedProcess[str]:
    """``python -m tests.support.scenarios NAME`` with ``settings`` as its only input."""
    return subprocess.run(
        [sys.executable, "-m", "tests.support.scenarios", name],
        cwd=REPO,
        env={**os.environ, **scenario_env(settings)},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def explain(done: subprocess.CompletedProcess[str]) -> str:
    """A failed child's output, for an assertion message."""
    return f"exit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-6000:]}"
