"""The ``LK_*`` environment that points an ``lk`` subprocess (or a DAG's task) at a test's
broker, topics, storage and jars; and ``lk`` run as its users run it, in a process of its own."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from config.settings import Settings
from tests.conftest import REPO


def lk_env(settings: Settings, **extra: str) -> dict[str, str]:
    """``LK_*`` variables that make ``load_settings()`` (in a task, a subprocess, an Airflow
    process) see the test's broker, topics, storage and jars; ``extra`` adds or overrides."""
    env = {
        "LK_KAFKA__BOOTSTRAP_SERVERS": settings.kafka.bootstrap_servers,
        "LK_KAFKA__EVENTS_TOPIC": settings.kafka.events_topic,
        "LK_KAFKA__CATALOG_TOPIC": settings.kafka.catalog_topic,
        "LK_KAFKA__ALERTS_TOPIC": settings.kafka.alerts_topic,
        "LK_STORAGE__ROOT": settings.storage.root,
        "LK_SPARK__JARS_DIR": str(settings.spark.jars_dir),
        "LK_SPARK__SHUFFLE_PARTITIONS": str(settings.spark.shuffle_partitions),
        "LK_BROKER__HOME": str(settings.broker.home),
        "LK_WATCHDOG__HOME": str(Path(settings.storage.root).parent / "speed"),
    }
    return {**env, **extra}


def run_lk(
    *args: str, env: dict[str, str], cwd: Path = REPO, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    """``lk ARGS`` in a process (and JVM) of its own, ``env`` over this process's
    environment; its stdout and stderr captured as text."""
    return subprocess.run(
        [sys.executable, "-m", "lk.cli.app", *args],
        cwd=cwd,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=timeout,
    )
