"""Entry points shared by Airflow tasks: load settings, build the session, call the layer.

Each returns plain JSON-ready data (Airflow keeps it as the task's XCom).
"""

from __future__ import annotations

from typing import Any

from lk.config import load_settings


def batch_run(force: bool = False) -> dict[str, Any]:
    """One Lambda batch run (the function ``lk batch`` calls)."""
    from batch_layer.job import run_batch
    from lk.spark import build_session

    settings = load_settings()
    result = run_batch(build_session(settings, app_name="lk-airflow-batch"), settings, force=force)
    return {**result.run.as_dict(), "skipped": result.skipped}


def speed_catch_up() -> dict[str, Any]:
    """Run the mode's streaming job until it has processed the log end (``lk speed``)."""
    from lk.spark import build_session
    from lk.wiring import run_streaming

    settings = load_settings()
    run = run_streaming(
        build_session(settings, app_name="lk-airflow-speed"), settings, until_caught_up=True
    )
    return {"lane": run.lane, "micro_batches": run.micro_batches, "seconds": run.seconds}


def kappa_reprocess() -> dict[str, Any]:
    """Replay the log into a new Kappa version and switch readers (``lk kappa reprocess``)."""
    from kappa.reprocess import reprocess
    from lk.spark import build_session

    settings = load_settings()
    result = reprocess(build_session(settings, app_name="lk-airflow-kappa"), settings)
    return {"version": result.version, "previous": result.previous, "diff": result.diff}


def status() -> dict[str, Any]:
    """The platform status (``lk status --json``)."""
    from lk.spark import build_session
    from lk.status import platform_status

    settings = load_settings()
    return platform_status(build_session(settings, app_name="lk-airflow-status"), settings)
