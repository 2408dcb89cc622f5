"""``speed_layer_watchdog``: a killed ``lk speed`` is started again and catches up."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from config.settings import load_settings
from lk import detached
from lk.detached import SPEED_PROCESS
from lk.tasks import speed_lag_check
from tests.dags.conftest import DAGS
from tests.support.env import lk_env
from tests.support.kafka import produce_spec
from workload.generator import WorkloadSpec

pytestmark = [pytest.mark.integration, pytest.mark.scenario]


def _lag(spark, settings) -> int | None:
    from designs.status import platform_status

    return (platform_status(spark, settings).get("streaming") or {}).get("total_lag")


def _wait_for(condition, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(3)


def test_watchdog_restarts_a_killed_speed_layer_which_catches_up(
    airflow_home, spark, topic_settings, use_env
):
    settings = topic_settings
    produce_spec(settings, WorkloadSpec(events=800, users=30, products=20, seed=31))
    use_env(
        lk_env(
            settings,
            LK_MODE="lambda",
            LK_WATCHDOG__MAX_LAG="0",
            LK_WATCHDOG__LAG_GRACE="5 minutes",
        )
    )
    config = load_settings()
    first = detached.start(config, SPEED_PROCESS, ["speed"])
    try:
        _wait_for(lambda: _lag(spark, settings) == 0, 300, "lk speed to catch up")
        os.killpg(first, signal.SIGKILL)  # the process and its Spark JVM, no clean-up
        _wait_for(lambda: detached.running(config, SPEED_PROCESS) is None, 30, "the kill")
        produce_spec(settings, WorkloadSpec(events=400, users=30, products=20, seed=32))
        assert _lag(spark, settings) > 0

        run = _watchdog_dag().test()
        states = {ti.task_id: str(ti.state) for ti in run.get_task_instances()}
        assert run.state == "success", states
        ensured = run.get_task_instance("ensure_running").xcom_pull(task_ids="ensure_running")
        assert ensured["started"] is True and ensured["pid"] != first
        assert detached.running(config, SPEED_PROCESS) == ensured["pid"]
        assert _lag(spark, settings) == 0

        again = _watchdog_dag().test()
        assert again.state == "success"
        kept = again.get_task_instance("ensure_running").xcom_pull(task_ids="ensure_running")
        assert kept == {"pid": ensured["pid"], "started": False}

        # A hung job: alive by its PID file, but its lag does not move: fail with figures.
        detached.stop(config, SPEED_PROCESS)
        hung = subprocess.Popen(
            [sys.executable, "-c", "import time; time.sleep(300)"], start_new_session=True
        )
        try:
            detached.pid_file(config, SPEED_PROCESS).write_text(f"{hung.pid}\n")
            produce_spec(settings, WorkloadSpec(events=200, users=30, products=20, seed=33))
            use_env({"LK_WATCHDOG__LAG_GRACE": "5 seconds"})
            with pytest.raises(RuntimeError, match=r"stayed over 0 offsets.*per partition \{"):
                speed_lag_check({"pid": hung.pid, "started": False})
        finally:
            hung.kill()
            hung.wait()
    finally:
        detached.stop(config, SPEED_PROCESS)
        with pytest.raises(ProcessLookupError):
            os.kill(first, 0)


def _watchdog_dag():
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=str(DAGS / "speed_layer_watchdog.py"))
    assert bag.import_errors == {}
    return bag.get_dag("speed_layer_watchdog")
