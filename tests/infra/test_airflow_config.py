"""How ``lk airflow up`` configures Airflow: ports, login, settings passed to the tasks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from config.settings import load_settings
from designs.platform import dag_skip_reason
from infra import airflow
from lk import detached

pytestmark = pytest.mark.unit


def test_env_binds_loopback_ports_and_keeps_lk_settings(tmp_path, monkeypatch) -> None:
    config = tmp_path / "lk.yaml"
    config.write_text("mode: kappa\n")
    monkeypatch.setenv("LK_CONFIG", str(config))
    monkeypatch.setenv("LK_KAFKA__EVENTS_TOPIC", "events_x")
    monkeypatch.setenv("AIRFLOW__CORE__UNIT_TEST_MODE", "True")  # a caller's Airflow setup
    settings = load_settings(
        airflow={"home": str(tmp_path / "af"), "port": 18081, "worker_log_port": 18794}
    )
    (tmp_path / "af").mkdir()
    env = airflow.airflow_env(settings)
    assert env["AIRFLOW__API__HOST"] == "127.0.0.1"
    assert env["AIRFLOW__API__PORT"] == "18081"
    assert env["AIRFLOW__CORE__EXECUTION_API_SERVER_URL"] == "http://127.0.0.1:18081/execution/"
    assert env["AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT"] == "18794"
    assert env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"] == f"sqlite:///{tmp_path}/af/airflow.db"
    assert Path(env["AIRFLOW__CORE__DAGS_FOLDER"]).name == "dags"
    assert env["LK_KAFKA__EVENTS_TOPIC"] == "events_x"
    assert env["LK_CONFIG"] == str(config.resolve())
    assert "AIRFLOW__CORE__UNIT_TEST_MODE" not in env
    # every component must agree on the JWT secret: it is made once and kept
    assert (
        airflow.airflow_env(settings)["AIRFLOW__API_AUTH__JWT_SECRET"]
        == (env["AIRFLOW__API_AUTH__JWT_SECRET"])
    )


def test_credentials_are_generated_once_or_taken_from_the_settings(tmp_path) -> None:
    settings = load_settings(airflow={"home": str(tmp_path)})
    user, password = airflow.credentials(settings)
    assert user == "admin" and len(password) >= 12
    assert airflow.credentials(settings) == (user, password)
    stored = json.loads((tmp_path / "passwords.json").read_text())
    assert stored == {"admin": password}
    chosen = load_settings(airflow={"home": str(tmp_path), "password": "s3cret"})
    assert airflow.credentials(chosen) == ("admin", "s3cret")
    assert json.loads((tmp_path / "passwords.json").read_text()) == {"admin": "s3cret"}


def test_status_and_down_when_nothing_runs(tmp_path) -> None:
    settings = load_settings(airflow={"home": str(tmp_path), "port": 1})
    current = airflow.status(settings)
    assert not current.running and current.last_runs == {}
    assert airflow.down(settings) == []


def test_schedules_can_be_switched_off() -> None:
    settings = load_settings(airflow={"nightly_schedule": "none", "watchdog_schedule": ""})
    assert settings.airflow.nightly_schedule is None
    assert settings.airflow.watchdog_schedule is None
    assert load_settings().airflow.nightly_schedule == "@daily"


def test_mode_decides_which_dags_run() -> None:
    lam, kap = load_settings(mode="lambda"), load_settings(mode="kappa")
    assert dag_skip_reason("lambda_nightly", lam) is None
    assert "mode is 'kappa'" in dag_skip_reason("lambda_nightly", kap)
    assert dag_skip_reason("kappa_reprocess", kap) is None
    assert "operates the kappa design" in dag_skip_reason("kappa_reprocess", lam)
    for both in ("speed_layer_watchdog", "compare_architectures"):
        assert dag_skip_reason(both, lam) is None and dag_skip_reason(both, kap) is None


def test_detached_pid_files_follow_the_process(tmp_path) -> None:
    settings = load_settings(watchdog={"home": str(tmp_path)})
    with detached.claim(settings, "probe"):
        assert detached.running(settings, "probe") == os.getpid()
    assert detached.running(settings, "probe") is None
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    probe = detached.pid_file(settings, "probe")
    assert probe.parent == tmp_path
    probe.write_text(f"{sleeper.pid}\n")
    assert detached.running(settings, "probe") == sleeper.pid
    with pytest.raises(detached.AlreadyRunningError):
        detached.start(settings, "probe", ["--help"])
    assert detached.stop(settings, "probe", timeout_s=5)
    sleeper.wait(5)
    assert detached.running(settings, "probe") is None
    probe.write_text("999999 1\n")  # a dead PID: stale, removed
    assert detached.running(settings, "probe") is None
    assert not probe.exists()
    other_root = load_settings(watchdog={"home": str(tmp_path)}, storage={"root": "/elsewhere"})
    assert detached.pid_file(other_root, "probe") != probe  # one PID file per platform
