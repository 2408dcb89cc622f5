"""
### Kappa reprocess

Triggered by hand after a logic change (for example a new window size in the config):
replays the whole retained log into a new version of the views, switches readers once
it has caught up, and records the v-old/v-new diff.
"""

from __future__ import annotations

from datetime import datetime

from airflow.sdk import dag, task


@dag(schedule=None, start_date=datetime(2026, 11, 1), catchup=False, tags=["kappa"], doc_md=__doc__)
def kappa_reprocess():
    @task
    def reprocess() -> dict:
        from lk.tasks import kappa_reprocess as run

        return run()

    @task
    def report(result: dict) -> dict:
        from lk.tasks import status

        return status()

    report(reprocess())


kappa_reprocess()
