"""
### Kappa reprocess

Triggered by hand after a logic change: pass the view settings to change as the `views`
parameter (for example `{"tumbling_window": "2 minutes"}`).

1. **mode_gate** skips the run unless `mode` is `kappa`;
2. **preflight**: the retained log still starts at offset 0 (a truncated log is refused);
3. **new_version**: resumes the unfinished version a stopped run left (same view settings;
   others are dropped), or opens version n+1 with the settings frozen into it; its replay
   from offset 0 starts detached (`lk kappa build`); the log end is the target;
4. **caught_up**: a sensor in reschedule mode (no worker slot held while it waits) until
   the new version has reached the target offsets;
5. **validate**: the replay started at offset 0 and dropped nothing; Great Expectations
   over every view of the new version;
6. **switch**: saves the v-old/v-new diff and points readers at the new version in one
   Delta commit; the old version stays on storage (`lk kappa rollback`).

The steps are the ones `lk kappa reprocess` runs in one process (`designs.kappa.reprocess`).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from airflow.sdk import Param, dag, get_current_context, task


@dag(
    schedule=None,
    start_date=datetime(2026, 11, 1),
    catchup=False,
    max_active_runs=1,
    tags=["kappa"],
    doc_md=__doc__,
    params={
        "views": Param(
            {},
            type="object",
            description="view settings to change in the new version, e.g. "
            '{"tumbling_window": "2 minutes"}; empty: the configured ones',
        )
    },
)
def kappa_reprocess():
    @task
    def mode_gate() -> dict:
        from lk.tasks import mode_gate

        return mode_gate("kappa_reprocess")

    @task
    def preflight(gate: dict) -> dict:
        from lk.tasks import kappa_preflight

        return kappa_preflight()

    @task
    def new_version(checked: dict) -> dict:
        from lk.tasks import kappa_new_version

        return kappa_new_version(checked, get_current_context()["params"].get("views"))

    @task.sensor(poke_interval=30, timeout=timedelta(hours=6), mode="reschedule")
    def caught_up(built: dict) -> bool:
        from lk.tasks import kappa_caught_up

        return kappa_caught_up(built)

    @task
    def validate(built: dict) -> dict:
        from lk.tasks import kappa_validate

        return kappa_validate(built)

    @task
    def switch(built: dict) -> dict:
        from lk.tasks import kappa_switch

        return kappa_switch(built)

    checked = preflight(mode_gate())
    built = new_version(checked)
    waited = caught_up(built)
    validated = validate(built)
    waited >> validated
    validated >> switch(built)


kappa_reprocess()
