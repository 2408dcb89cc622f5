"""What the DAG tests share: the ``LK_*`` environment that points tasks at a test's topics."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from lk.config import Settings

DAGS = Path(__file__).resolve().parents[2] / "dags"


def lk_env(settings: Settings, **extra: str) -> dict[str, str]:
    """``LK_*`` variables that make ``load_settings()`` (in a task, a subprocess, an Airflow
    process) see the test's broker, topics, storage and jars."""
    env = {
        "LK_KAFKA__BOOTSTRAP_SERVERS": settings.kafka.bootstrap_servers,
        "LK_KAFKA__EVENTS_TOPIC": settings.kafka.events_topic,
        "LK_KAFKA__CATALOG_TOPIC": settings.kafka.catalog_topic,
        "LK_STORAGE__ROOT": settings.storage.root,
        "LK_SPARK__JARS_DIR": str(settings.spark.jars_dir),
        "LK_SPARK__SHUFFLE_PARTITIONS": str(settings.spark.shuffle_partitions),
        "LK_BROKER__HOME": str(settings.broker.home),
        "LK_WATCHDOG__HOME": str(Path(settings.storage.root).parent / "speed"),
    }
    return {**env, **extra}


@pytest.fixture
def use_env(monkeypatch: pytest.MonkeyPatch) -> Iterator:
    """Set ``LK_*`` variables for one test (undone afterwards)."""

    def apply(env: dict[str, str]) -> None:
        for key, value in env.items():
            monkeypatch.setenv(key, value)

    yield apply


@pytest.fixture(scope="session")
def airflow_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A migrated SQLite Airflow home for ``DagBag`` and ``dag.test()`` in this process.

    Session-wide: Airflow reads its configuration once per process.
    """
    home = tmp_path_factory.mktemp("airflow")
    env = {
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__DAGS_FOLDER": str(DAGS),
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home}/airflow.db",
        "AIRFLOW__CORE__UNIT_TEST_MODE": "True",
    }
    os.environ.update(env)
    subprocess.run(
        [sys.executable, "-m", "airflow", "db", "migrate"],
        check=True,
        env={**os.environ, **env},
        capture_output=True,
    )
    return home
