"""The Airflow DAGs: they import, have the expected shape, and run end to end."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.integration
DAGS = REPO / "dags"


@pytest.fixture(scope="module")
def airflow_home(tmp_path_factory) -> Path:
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


@pytest.fixture(scope="module")
def dagbag(airflow_home):
    from airflow.dag_processing.dagbag import DagBag

    return DagBag(dag_folder=str(DAGS))


def test_dags_import_without_errors(dagbag):
    assert dagbag.import_errors == {}
    assert set(dagbag.dag_ids) == {"lambda_nightly", "kappa_reprocess"}


def test_lambda_dag_shape(dagbag):
    dag = dagbag.get_dag("lambda_nightly")
    assert dag.catchup is False
    order = {t.task_id: sorted(t.downstream_task_ids) for t in dag.tasks}
    assert order == {
        "batch": ["speed_onto_new_run"],
        "speed_onto_new_run": ["report"],
        "report": [],
    }


def test_lambda_dag_runs_the_batch_and_speed_layers(dagbag, spark, topic_settings, monkeypatch):
    from event_log.generator import WorkloadSpec
    from tests.support.kafka import produce_spec

    settings = topic_settings
    produce_spec(settings, WorkloadSpec(events=1_000, users=30, products=20, seed=5))
    for key, value in {
        "LK_KAFKA__BOOTSTRAP_SERVERS": settings.kafka.bootstrap_servers,
        "LK_KAFKA__EVENTS_TOPIC": settings.kafka.events_topic,
        "LK_KAFKA__CATALOG_TOPIC": settings.kafka.catalog_topic,
        "LK_STORAGE__ROOT": settings.storage.root,
        "LK_SPARK__JARS_DIR": str(settings.spark.jars_dir),
    }.items():
        monkeypatch.setenv(key, value)
    run = dagbag.get_dag("lambda_nightly").test()
    assert run.state == "success"
    from lk.status import platform_status

    status = platform_status(spark, settings)
    assert status["batch"]["status"] == "published"
    assert status["streaming"]["total_lag"] == 0
