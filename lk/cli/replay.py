"""``lk replay FILE``: publish the rows of a CSV, JSON Lines or Parquet file as events."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from lk.cli.common import console, err_console, settings

Opt = typer.Option


def replay_command(
    file: Annotated[Path, typer.Argument(help="CSV, JSON Lines (.jsonl) or Parquet file.")],
    time_column: Annotated[
        str | None,
        Opt(help="File column holding the event time (default: the contract's time field)."),
    ] = None,
    id_column: Annotated[
        str | None, Opt(help="File column holding the event id (default: the contract's).")
    ] = None,
    key_column: Annotated[
        str | None, Opt(help="Contract field whose value is the Kafka key (default: key_field).")
    ] = None,
    speedup: Annotated[
        float | None, Opt(help="Pace sends at X times the event-time rate.", min=0.0001)
    ] = None,
    as_fast_as_possible: Annotated[
        bool, Opt("--as-fast-as-possible", help="No pacing (the default).")
    ] = False,
    keep_file_order: Annotated[
        bool, Opt("--keep-file-order", help="Send in file order, not event-time order.")
    ] = False,
    fmt: Annotated[
        str | None, Opt("--format", help="csv, jsonl or parquet (default: from the suffix).")
    ] = None,
    run_rows: Annotated[
        int, Opt(help="Rows sorted in memory at once (larger files spill sorted runs).", min=1)
    ] = 200_000,
    as_json: Annotated[bool, Opt("--json", help="Print the summary as JSON.")] = False,
) -> None:
    """Publish a file's rows to the events topic, in event-time order, through the producer.

    A row that does not fit the event schema is sent anyway (the decoder quarantines it
    with its reason) and listed here by line number: nothing is dropped.
    """
    from dataclasses import replace

    from rich.markup import escape
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn
    from rich.table import Table

    from event_log.configured import load_contract
    from workload.producer import produce
    from workload.replay import ReplayError, ReplayStats, replay_records

    if speedup and as_fast_as_possible:
        err_console.print(
            "[red]error:[/red] --speedup and --as-fast-as-possible exclude each other"
        )
        raise typer.Exit(2)
    config = settings()
    contract = load_contract(config.events)
    renames = {}
    if time_column:
        renames[time_column] = contract.time_field
    if id_column:
        renames[id_column] = contract.id_field
    if key_column:
        if key_column not in contract.names:
            raise typer.BadParameter(
                f"{key_column!r} is not a field of the events", param_hint="--key-column"
            )
        contract = replace(contract, key_field=key_column)
    if not file.is_file():
        raise ReplayError(f"{file}: no such file")
    stats = ReplayStats()
    records = replay_records(
        file,
        contract,
        stats,
        fmt=fmt,
        keep_file_order=keep_file_order,
        speedup=speedup,
        run_rows=run_rows,
        renames=renames,
    )
    with Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        TextColumn("{task.completed:,.0f} rows"),
        TimeElapsedColumn(),
        console=err_console,
        disable=as_json,
    ) as progress:
        task = progress.add_task(f"replaying {file.name}", total=None)
        report = produce(config, records, on_progress=lambda n: progress.advance(task, n))
    summary = {
        "file": str(file),
        "order": "file" if keep_file_order else "event time",
        **stats.as_dict(),
        "sent": report.sent,
        "acknowledged": report.acknowledged,
        "failed": report.failed,
        "seconds": round(report.seconds, 3),
        "rows_per_second": round(report.events_per_second, 1),
    }
    if as_json:
        console.print_json(json.dumps(summary))
    else:
        table = Table(title="lk replay", show_header=False)
        for name in ("file", "order", "rows", "sent", "acknowledged", "failed"):
            table.add_row(
                name.replace("_", " "),
                f"{summary[name]:,}" if isinstance(summary[name], int) else str(summary[name]),
            )
        table.add_row(
            "rows not fitting the schema", f"{stats.misfits:,} (sent; quarantined downstream)"
        )
        table.add_row("out-of-order rows in the file", f"{stats.out_of_order:,}")
        table.add_row(
            "event time", f"{summary['first_event_time']} .. {summary['last_event_time']}"
        )
        table.add_row("seconds", f"{report.seconds:.2f}")
        table.add_row("rows/s", f"{report.events_per_second:,.0f}")
        console.print(table)
        for line, problem in stats.misfit_lines[:20]:
            console.print(escape(f"  line {line}: {problem}"))
        if stats.misfits > 20:
            console.print(f"  ... and {stats.misfits - 20:,} more (--json lists 100)")
    if report.failed or report.acknowledged != report.sent or report.stopped_at is not None:
        for error in report.errors[:5]:
            console.print(f"[red]{error}[/red]")
        console.print(f"[red]{report.describe_unsent()}[/red] (positions in send order)")
        raise typer.Exit(1)
