"""
### Compare architectures

Triggered by hand. `lk compare` does not exist yet, so this runs the two designs'
oracle checks: per view, the rows each design serves against the independent oracle
over the whole log (rows equal, only served, only in the oracle), and writes the report
under `<storage root>/reports/`. It reports rather than fails: Kappa legitimately lacks
events later than a view's allowed lateness; Lambda serves provisional speed rows.
"""

from __future__ import annotations

from datetime import datetime

from airflow.sdk import dag, task


@dag(
    schedule=None,
    start_date=datetime(2026, 11, 1),
    catchup=False,
    max_active_runs=1,
    tags=["lambda", "kappa"],
    doc_md=__doc__,
)
def compare_architectures():
    @task
    def mode_gate() -> dict:
        from lk.tasks import mode_gate

        return mode_gate("compare_architectures")

    @task
    def lambda_vs_oracle(gate: dict) -> dict:
        from lk.tasks import compare_with_oracle

        return compare_with_oracle("lambda")

    @task
    def kappa_vs_oracle(gate: dict) -> dict:
        from lk.tasks import compare_with_oracle

        return compare_with_oracle("kappa")

    @task
    def publish_report(lambda_report: dict, kappa_report: dict) -> dict:
        from lk.tasks import publish_comparison

        return publish_comparison([lambda_report, kappa_report])

    gate = mode_gate()
    lam = lambda_vs_oracle(gate)
    kap = kappa_vs_oracle(gate)
    lam >> kap  # one Spark job at a time on two cores
    publish_report(lam, kap)


compare_architectures()
