"""
### Lambda nightly batch

Recomputes every view over the whole retained log (`lk batch`), then lets the speed
layer catch up onto the new batch run, then records the platform status. The batch
run is idempotent: with no new events it changes nothing.
"""

from __future__ import annotations

from datetime import datetime

from airflow.sdk import dag, task


@dag(
    schedule="@daily",
    start_date=datetime(2026, 11, 1),
    catchup=False,
    tags=["lambda"],
    doc_md=__doc__,
    default_args={"retries": 1},
)
def lambda_nightly():
    @task
    def batch() -> dict:
        from lk.tasks import batch_run

        return batch_run()

    @task
    def speed_onto_new_run(run: dict) -> dict:
        from lk.tasks import speed_catch_up

        return speed_catch_up()

    @task
    def report(speed: dict) -> dict:
        from lk.tasks import status

        return status()

    report(speed_onto_new_run(batch()))


lambda_nightly()
