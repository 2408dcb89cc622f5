"""``lambda_nightly`` under the real scheduler: ``lk airflow up``, REST trigger, ``down``.

Airflow starts once for the module (about a minute here) with a temp home, free ports
and the ``LK_*`` variables of this module's topics, so its task processes work on them.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator

import pytest

from config.settings import Settings, load_settings
from infra.local import free_ports
from oracle import consume_all
from tests.conftest import fresh_topics
from tests.support.env import lk_env
from tests.support.kafka import produce_spec
from tests.support.workload import assert_view_matches, oracle_views
from views import default_registry
from workload.generator import WorkloadSpec

pytestmark = [pytest.mark.integration, pytest.mark.scenario]
RUN_TIMEOUT_S = 900


@pytest.fixture(scope="module")
def airflow_up(kafka_settings: Settings, tmp_path_factory) -> Iterator[tuple[Settings, Settings]]:
    """(settings of the test's topics, settings Airflow runs with) while Airflow is up."""
    from infra import airflow

    topics = fresh_topics(kafka_settings)
    api, worker_logs, trigger_logs = free_ports(3)
    env = lk_env(
        topics,
        LK_MODE="lambda",
        LK_AIRFLOW__HOME=str(tmp_path_factory.mktemp("airflow-home")),
        LK_AIRFLOW__PORT=str(api),
        LK_AIRFLOW__WORKER_LOG_PORT=str(worker_logs),
        LK_AIRFLOW__TRIGGER_LOG_PORT=str(trigger_logs),
        # Runs only when the test triggers them: no scheduled run races the test's.
        LK_AIRFLOW__NIGHTLY_SCHEDULE="none",
        LK_AIRFLOW__WATCHDOG_SCHEDULE="none",
    )
    with pytest.MonkeyPatch.context() as patch:
        for key, value in env.items():
            patch.setenv(key, value)
        settings = load_settings()
        try:
            started = airflow.up(settings)
            assert started.running and set(started.health.values()) == {"healthy"}
            yield topics, settings
        finally:
            stopped = airflow.down(settings)
            assert stopped, "down found nothing to stop"
            alive = [pid for pid in stopped if _alive(pid)]
            assert alive == [], f"processes left behind: {alive}"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _run_nightly(settings: Settings) -> tuple[str, dict[str, str | None]]:
    """Trigger ``lambda_nightly`` through the REST API and wait for it to finish."""
    from infra.airflow import Client

    client = Client(settings)
    deadline = time.monotonic() + 120
    while True:  # the DAG processor may not have serialized the DAG yet
        try:
            client.unpause("lambda_nightly")
            break
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(3)
    run_id = client.trigger("lambda_nightly")
    deadline = time.monotonic() + RUN_TIMEOUT_S
    state = client.run_state("lambda_nightly", run_id)
    while state not in ("success", "failed"):
        assert time.monotonic() < deadline, client.task_states("lambda_nightly", run_id)
        time.sleep(5)
        state = client.run_state("lambda_nightly", run_id)
    return state, client.task_states("lambda_nightly", run_id)


def test_nightly_run_under_the_scheduler_serves_what_the_oracle_computes(spark, airflow_up):
    from batch_layer import runs
    from infra.airflow import status
    from lake.tables import Tables

    topics, settings = airflow_up
    produce_spec(topics, WorkloadSpec(events=1_500, users=40, products=25, seed=21))

    state, tasks = _run_nightly(settings)
    assert state == "success", tasks
    assert set(tasks.values()) == {"success"}, tasks

    published = runs.latest_published(spark, Tables.of(topics))
    assert published is not None
    events = consume_all(topics, topics.kafka.events_topic)
    assert sum(published.cutoff.values()) == len(events)
    expected = oracle_views(events, consume_all(topics, topics.kafka.catalog_topic), topics.views)
    from tests.support.serving import read_served

    for view in default_registry():
        assert_view_matches(read_served(spark, topics, view.name), expected[view.name], view.name)
    last = status(settings).last_runs["lambda_nightly"]
    assert last is not None and last["state"] == "success"
