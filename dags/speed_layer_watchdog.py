"""
### Speed layer watchdog

Every few minutes (`airflow.watchdog_schedule`): is the long-running `lk speed` (the
streaming job of the configured mode: the Lambda speed layer or the serving Kappa
version) alive, by its PID file, and is its consumer lag under `watchdog.max_lag`?

* **ensure_running** starts `lk speed` detached when no live process holds the PID file;
* **lag_check** fails with the lag per partition when the lag stays over the threshold
  for `watchdog.lag_grace` (a freshly started job gets that long to catch up).
"""

from __future__ import annotations

from datetime import datetime

from airflow.sdk import dag, task

from config.settings import load_settings


@dag(
    schedule=load_settings().airflow.watchdog_schedule,
    start_date=datetime(2026, 11, 1),
    catchup=False,
    max_active_runs=1,
    tags=["lambda", "kappa", "streaming"],
    doc_md=__doc__,
)
def speed_layer_watchdog():
    @task
    def mode_gate() -> dict:
        from lk.tasks import mode_gate

        return mode_gate("speed_layer_watchdog")

    @task
    def ensure_running(gate: dict) -> dict:
        from lk.tasks import speed_ensure_running

        return speed_ensure_running()

    @task
    def lag_check(process: dict) -> dict:
        from lk.tasks import speed_lag_check

        return speed_lag_check(process)

    lag_check(ensure_running(mode_gate()))


speed_layer_watchdog()
