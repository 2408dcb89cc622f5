"""``lk batch``: one batch-layer run (freeze cutoff, land, recompute, check, publish)."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.table import Table

from lk import detached
from lk.cli.common import console, platform, progress_bar, settings


def batch_command(
    force: Annotated[bool, typer.Option(help="Recompute even if the log has not moved.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the run as JSON.")] = False,
) -> None:
    """Recompute every view over the whole log up to a frozen cutoff and publish atomically."""
    from batch_layer.job import run_batch
    from lake.spark import build_session

    config = settings()
    built = platform(config)
    registry = built.registry
    with detached.claim(config, detached.BATCH_WRITER):  # one writer per table (docs/scaling.md)
        spark = build_session(config, app_name="lk-batch")
        with progress_bar(disable=as_json) as progress:
            task = progress.add_task("batch: recomputing views", total=len(registry))
            result = run_batch(
                spark, config, registry, force=force, on_view=lambda name: progress.advance(task)
            )
        if not result.skipped:
            built.publish_alerts(spark)
    run = result.run
    if as_json:
        console.print_json(json.dumps({**run.as_dict(), "skipped": result.skipped}))
        return
    if result.skipped:
        console.print(f"log unchanged since run {run.run_id}: nothing to recompute")
        return
    table = Table(title=f"batch run {run.run_id}", show_header=False)
    table.add_row("status", run.status)
    table.add_row("cutoff (end offset per partition)", json.dumps(run.cutoff))
    table.add_row("bronze rows", f"{run.bronze_rows:,}")
    table.add_row("quarantined rows", f"{run.quarantined_rows:,}")
    table.add_row(
        "checks", ", ".join(f"{r.table}: {'ok' if r.success else 'FAILED'}" for r in result.checks)
    )
    assert run.finished_at is not None  # run_batch returns a computed or published run
    table.add_row("seconds", f"{(run.finished_at - run.started_at).total_seconds():.1f}")
    table.add_row("of which", ", ".join(f"{step} {s:.1f} s" for step, s in result.steps.items()))
    console.print(table)
