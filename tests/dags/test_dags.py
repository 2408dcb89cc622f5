"""The four DAGs: they parse fast without errors, have the expected shape, honour ``mode``.

These run DAGs with ``dag.test()`` (tasks in this process, no scheduler);
``test_airflow_scheduler.py`` runs ``lambda_nightly`` under the real scheduler.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from datetime import timedelta

import pytest

from designs.platform import build
from tests.dags.conftest import DAGS
from tests.support.env import lk_env

pytestmark = pytest.mark.integration
DAG_IDS = {"lambda_nightly", "speed_layer_watchdog", "kappa_reprocess", "compare_architectures"}


@pytest.fixture(scope="module")
def dagbag(airflow_home):
    from airflow.dag_processing.dagbag import DagBag

    return DagBag(dag_folder=str(DAGS))


def test_dags_import_without_errors(dagbag):
    assert dagbag.import_errors == {}
    assert set(dagbag.dag_ids) == DAG_IDS


def test_dag_folder_parses_in_under_two_seconds(airflow_home):
    """A fresh interpreter, as the DAG processor has: no Spark, Kafka or GX import at parse."""
    probe = (
        "import time, sys\n"
        "from airflow.dag_processing.dagbag import DagBag\n"
        "t = time.perf_counter()\n"
        f"bag = DagBag(dag_folder={str(DAGS)!r})\n"
        "took = time.perf_counter() - t\n"
        "heavy = [m for m in ('pyspark', 'great_expectations', 'kafka') if m in sys.modules]\n"
        "print(took, len(bag.dag_ids), ','.join(heavy) or '-')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, env=os.environ
    )
    took, count, heavy = done.stdout.strip().splitlines()[-1].split()
    assert int(count) == 4
    assert heavy == "-"
    assert float(took) < 2.0


def test_compare_dag_is_a_thin_task_over_lk_compare(dagbag):
    dag = dagbag.get_dag("compare_architectures")
    assert set(dag.task_dict) == {"mode_gate", "compare"}
    assert dag.task_dict["compare"].upstream_task_ids == {"mode_gate"}
    assert set(dag.params) == {"options", "out"}


def test_lambda_dag_shape(dagbag):
    dag = dagbag.get_dag("lambda_nightly")
    assert dag.catchup is False
    order = {t.task_id: sorted(t.downstream_task_ids) for t in dag.tasks}
    assert order == {
        "mode_gate": ["broker_health"],
        "broker_health": ["batch_compute"],
        "batch_compute": ["validate"],
        "validate": ["publish"],
        "publish": ["speed_onto_new_run"],
        "speed_onto_new_run": ["report"],
        "report": [],
    }
    (asset,) = dag.get_task("publish").outlets
    assert asset.name == "lambda_batch_views"


def test_kappa_dag_waits_with_a_rescheduling_sensor(dagbag):
    dag = dagbag.get_dag("kappa_reprocess")
    sensor = dag.get_task("caught_up")
    assert sensor.mode == "reschedule"
    assert dag.get_task("validate").downstream_task_ids == {"switch"}
    assert "caught_up" in dag.get_task("validate").upstream_task_ids
    assert "views" in dag.params


def _states(run) -> dict[str, str]:
    return {ti.task_id: str(ti.state) for ti in run.get_task_instances()}


def test_mode_lambda_runs_lambda_nightly_and_skips_kappa_reprocess(
    dagbag, spark, topic_settings, use_env
):
    """The nightly runs in lambda mode; a workload that breaks a GX check stops it there."""
    from batch_layer import runs
    from batch_layer.job import run_batch
    from lake.tables import Tables
    from tests.support.kafka import produce_spec
    from tests.support.serving import read_served
    from workload.generator import WorkloadSpec

    settings = topic_settings
    tables = Tables.of(settings)
    produce_spec(settings, WorkloadSpec(events=1_000, users=30, products=20, seed=5))
    # At most 20% of the records a run lands may be malformed (the generator's usual 0.5%
    # passes; the second workload's 50% does not).
    use_env(lk_env(settings, LK_MODE="lambda", LK_QUALITY__MAX_QUARANTINED_FRACTION="0.2"))

    skipped = dagbag.get_dag("kappa_reprocess").test()
    assert skipped.state == "success"
    assert set(_states(skipped).values()) == {"skipped"}

    # The previous run, published the way `lk batch` does (the same compute, validate and
    # publish steps); test_airflow_scheduler.py runs the whole DAG to success.
    published = run_batch(spark, settings, build(settings).registry).run
    assert published.status == "published"
    served = read_served(spark, settings, "revenue_by_category").collect()
    produce_spec(
        settings,
        WorkloadSpec(events=600, users=30, products=20, seed=22, malformed_fraction=0.5),
    )
    failed_run = dagbag.get_dag("lambda_nightly").test()
    states = _states(failed_run)
    assert failed_run.state == "failed", states
    assert states["mode_gate"] == states["broker_health"] == states["batch_compute"] == "success"
    assert states["validate"] == "failed"
    assert states["publish"] == states["speed_onto_new_run"] == "upstream_failed"
    history = runs.history(spark, tables)
    newest = [r for r in history if r.run_id == history[-1].run_id]
    assert {r.status for r in newest} == {"computed", "failed"}
    failed = next(r for r in newest if r.status == "failed")
    assert "expect_column_values_to_be_null(reason)" in failed.detail
    assert runs.latest_published(spark, tables).run_id == published.run_id
    assert read_served(spark, settings, "revenue_by_category").collect() == served


# make scenarios, not CI: the Kappa reprocess through Airflow (80 s; its DAG's shape is in CI)
@pytest.mark.scenario
def test_mode_kappa_runs_kappa_reprocess_and_skips_lambda_nightly(
    dagbag, spark, topic_settings, use_env
):
    from config.settings import ViewSettings
    from designs.kappa.versions import open_version, serving_version
    from lake.tables import Tables
    from tests.support.kafka import produce_spec
    from workload.generator import WorkloadSpec

    settings = topic_settings
    produce_spec(settings, WorkloadSpec(events=1_000, users=30, products=20, seed=6))
    use_env(lk_env(settings, LK_MODE="kappa"))

    skipped = dagbag.get_dag("lambda_nightly").test()
    assert skipped.state == "success"
    assert set(_states(skipped).values()) == {"skipped"}
    assert serving_version(spark, Tables.of(settings)) is None

    started = time.monotonic()
    run = dagbag.get_dag("kappa_reprocess").test(
        run_conf={"views": {"tumbling_window": "2 minutes"}}
    )
    assert run.state == "success", _states(run)
    assert set(_states(run).values()) == {"success"}
    assert serving_version(spark, Tables.of(settings)) == 1
    assert time.monotonic() - started < 600
    frozen = open_version(spark, settings, 1).views
    assert ViewSettings.model_validate(frozen).tumbling_window == timedelta(minutes=2)
