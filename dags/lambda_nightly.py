"""
### Lambda nightly batch

The Lambda design's nightly run, one visible task per step:

1. **mode_gate** skips the whole run unless `mode` is `lambda` (a skip, not a failure);
2. **broker_health**: the broker answers and both topics exist;
3. **batch_compute**: freeze a cutoff, land the log, write every view of a new run
   (recorded `computed`, not visible to readers);
4. **validate**: Great Expectations over bronze, the landed records and every view:
   a failure stops the run here, the run is recorded `failed`, the previous published
   run keeps serving;
5. **publish**: one append to the runs log; updates the `lambda_batch_views` asset that
   downstream DAGs can schedule on;
6. **speed_onto_new_run**: the speed layer catches up onto the new run;
7. **report**: the platform status (`lk status --json`).
"""

from __future__ import annotations

from datetime import datetime

from airflow.sdk import Asset, dag, task

from config.settings import load_settings

BATCH_VIEWS = Asset(name="lambda_batch_views", uri="lk://lambda/batch_views")


@dag(
    schedule=load_settings().airflow.nightly_schedule,
    start_date=datetime(2026, 11, 1),
    catchup=False,
    max_active_runs=1,
    tags=["lambda"],
    doc_md=__doc__,
)
def lambda_nightly():
    @task
    def mode_gate() -> dict:
        from lk.tasks import mode_gate

        return mode_gate("lambda_nightly")

    @task(retries=2)
    def broker_health(gate: dict) -> dict:
        from lk.tasks import broker_health

        return broker_health()

    @task
    def batch_compute(health: dict) -> dict:
        from lk.tasks import batch_compute

        return batch_compute()

    @task
    def validate(run: dict) -> dict:
        from lk.tasks import batch_validate

        return batch_validate(run)

    @task(outlets=[BATCH_VIEWS])
    def publish(validated: dict) -> dict:
        from lk.tasks import batch_publish

        return batch_publish(validated)

    @task
    def speed_onto_new_run(published: dict) -> dict:
        from lk.tasks import speed_catch_up

        return speed_catch_up()

    @task
    def report(speed: dict) -> dict:
        from lk.tasks import status

        return status()

    report(speed_onto_new_run(publish(validate(batch_compute(broker_health(mode_gate()))))))


lambda_nightly()
