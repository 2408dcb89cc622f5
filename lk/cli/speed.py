"""``lk speed`` and ``lk status``: the streaming job of the configured mode, and its health."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.table import Table

from lk.cli.common import console, platform, settings


def speed_command(
    until_caught_up: Annotated[
        bool, typer.Option(help="Process every offset present at start, then exit.")
    ] = False,
) -> None:
    """Run the streaming job: the Lambda speed layer, or the serving Kappa version."""
    from contextlib import ExitStack

    from lake.spark import build_session
    from lk import detached

    config = settings()
    built = platform(config)  # a bad schema or view module stops here, before Spark

    def show(metrics: dict) -> None:
        console.log(
            f"batch {metrics['batch_id']}: {metrics['input_rows']} rows, "
            f"{metrics['batch_duration_ms']} ms, "
            f"{metrics['processed_rows_per_second'] or 0:.0f} rows/s"
        )

    with ExitStack() as stack:
        if not until_caught_up:
            # The long-running job holds a PID file: the Airflow watchdog checks it, and a
            # second `lk speed` on the same lane is refused instead of racing the first.
            stack.enter_context(detached.claim(config, detached.SPEED_PROCESS))
        spark = build_session(config, app_name="lk-speed")
        run = built.run_streaming(spark, until_caught_up=until_caught_up, on_progress=show)
    console.print(f"{run.lane}: {run.input_rows:,} rows in {run.seconds:.1f} s")


def status_command(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Mode, serving source, batch cutoff, streaming rates, consumer lag, late events."""
    from designs.status import platform_status
    from lake.spark import build_session

    config = settings()
    status = platform_status(build_session(config, app_name="lk-status"), config)
    if as_json:
        console.print_json(json.dumps(status, default=str))
        return
    table = Table(title=f"lk status ({status['mode']})", show_header=False)
    table.add_row("serving", status["serving_source"])
    batch = status.get("batch")
    table.add_row("batch run", f"{batch['run_id']} cutoff {batch['cutoff']}" if batch else "-")
    lane = status.get("streaming") or {}
    if lane.get("exists"):
        table.add_row("streaming lane", f"{lane['lane']} (epoch {lane['epoch']})")
        table.add_row("last micro-batch", str(lane["last_batch_id"]))
        table.add_row("consumer lag", f"{lane['total_lag']} {lane['consumer_lag']}")
        table.add_row("input rows/s", str(lane["input_rows_per_second"]))
        table.add_row("processed rows/s", str(lane["processed_rows_per_second"]))
        table.add_row("median batch s", str(lane["median_batch_seconds"]))
        phases = lane["median_phase_seconds"]
        inside = ("prepare", "count", "commit", "maintain")
        table.add_row(
            "of which (median s)",
            "  ".join(f"{name} {phases[name]}" for name in inside if name in phases) or "-",
        )
        if state := lane.get("dedup_state"):
            scans = [
                f"{name} {phases[name]}"
                for name in ("stateUpdates", "stateRemovals", "stateCommit")
                if name in phases
            ]
            table.add_row(
                "de-duplication state",
                f"{state['rows']:,} ids ({'  '.join(scans) or '-'}, median s)",
            )
        if outages := lane.get("log_outages"):
            last = outages["last"]
            table.add_row(
                "restarts, log out of reach",
                f"{outages['restarts']}"
                + (f" (last {last['at']}: {last['reason'][:120]})" if last else ""),
            )
        table.add_row("late (excluded) per view", json.dumps(lane["late_rows"]))
        table.add_row("re-sends dropped", f"{lane['duplicates']:,}")
        if lane["watermark_drops"]:  # only with stream.dedup_horizon set: lost, not late
            table.add_row(
                "[red]dropped behind the dedup watermark[/red]", f"{lane['watermark_drops']:,}"
            )
        table.add_row("quarantined", str(lane["quarantined_rows"]))
        if size := lane.get("log_size"):
            table.add_row(
                "lane log",
                f"{size['files']:,} files, {size['bytes'] / 1e6:,.1f} MB read; "
                f"{size['stored_files']:,} files, {size['stored_bytes'] / 1e6:,.1f} MB stored "
                f"({size['log_files']:,} in _delta_log)",
            )
    else:
        table.add_row("streaming lane", lane.get("detail", "not started"))
    if "kappa" in status:
        table.add_row(
            "kappa versions",
            f"{status['kappa']['versions']} serving v{status['kappa']['serving_version']}",
        )
    console.print(table)
