"""
### Compare architectures

Triggered by hand. Runs `lk compare` (the same function, `compare.run.run_compare`):
one seeded workload through Lambda and Kappa, one design after the other, each against
the oracle, with freshness, correctness over time, the handoff, late data, cost and
complexity side by side. Params: `options` (any `lk compare` option, e.g.
`{"events": 20000, "rate": 200, "live_seconds": 60}`) and `out` (the report folder,
default `.lk/reports`). The task returns where `report.html` is and the verdict.
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
    params={"options": {}, "out": None},
)
def compare_architectures():
    @task
    def mode_gate() -> dict:
        from lk.tasks import mode_gate

        return mode_gate("compare_architectures")

    @task
    def compare(gate: dict, params: dict | None = None) -> dict:
        from lk.tasks import compare_designs

        params = params or {}
        return compare_designs(params.get("options") or {}, params.get("out"))

    compare(mode_gate())


compare_architectures()
