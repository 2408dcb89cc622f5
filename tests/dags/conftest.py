"""What the DAG tests share: the DAGs' folder, an Airflow home, ``LK_*`` variables set per test."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

DAGS = Path(__file__).resolve().parents[2] / "dags"


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
