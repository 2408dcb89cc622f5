"""``lk produce``: publish a seeded workload to the ``events`` and ``catalog`` topics."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Annotated

import typer
from rich.table import Table

from lk.cli.common import console, progress_bar, settings

Opt = typer.Option


def produce_command(
    events: Annotated[
        int, Opt(help="Number of real events (re-sends and junk come on top).")
    ] = 10_000,
    seed: Annotated[int, Opt(help="Seed: the same seed gives the same records.")] = 42,
    users: Annotated[int, Opt()] = 200,
    products: Annotated[int, Opt()] = 100,
    start: Annotated[datetime, Opt(help="Event time (UTC) the workload starts at.")] = datetime(
        2026, 11, 1
    ),
    span_minutes: Annotated[float, Opt(help="Event-time span of the workload.")] = 360.0,
    late_fraction: Annotated[float, Opt(help="Fraction of events sent late.")] = 0.02,
    max_lateness_minutes: Annotated[float, Opt(help="Maximum delay of a late event.")] = 45.0,
    jitter_seconds: Annotated[float, Opt(help="Out-of-order jitter of every event.")] = 5.0,
    duplicates: Annotated[float, Opt(help="Fraction of events re-sent (same event_id).")] = 0.01,
    malformed: Annotated[float, Opt(help="Fraction of malformed records added.")] = 0.005,
    skewed_users: Annotated[float, Opt(help="Fraction of users with a skewed clock.")] = 0.05,
    max_skew_seconds: Annotated[float, Opt()] = 30.0,
    catalog_updates: Annotated[int, Opt()] = 20,
    catalog_deletes: Annotated[int, Opt()] = 5,
    as_json: Annotated[bool, Opt("--json", help="Print the summary as JSON.")] = False,
) -> None:
    """Publish a seeded workload through an idempotent producer (acks=all)."""
    from workload.generator import WorkloadSpec, describe, workload
    from workload.producer import produce

    config = settings()
    spec = WorkloadSpec(
        events=events,
        seed=seed,
        users=users,
        products=products,
        start=start.replace(tzinfo=None),
        span=timedelta(minutes=span_minutes),
        late_fraction=late_fraction,
        max_lateness=timedelta(minutes=max_lateness_minutes),
        jitter=timedelta(seconds=jitter_seconds),
        duplicate_fraction=duplicates,
        malformed_fraction=malformed,
        skewed_users_fraction=skewed_users,
        max_clock_skew=timedelta(seconds=max_skew_seconds),
        catalog_updates=catalog_updates,
        catalog_deletes=catalog_deletes,
    )
    expected = round(events * (1 + duplicates + malformed)) + products + catalog_updates
    with progress_bar(remaining=True, disable=as_json) as progress:
        task = progress.add_task(f"producing {describe(spec)}", total=expected)
        report = produce(config, workload(spec), on_progress=lambda n: progress.advance(task, n))
        progress.update(task, total=report.sent, completed=report.sent)
    if as_json:
        console.print_json(json.dumps(report.as_dict()))
    else:
        table = Table(title="lk produce", show_header=False)
        for name, value in (
            ("sent", f"{report.sent:,}"),
            ("acknowledged", f"{report.acknowledged:,}"),
            ("failed", f"{report.failed:,}"),
            ("seconds", f"{report.seconds:.2f}"),
            ("records/s", f"{report.events_per_second:,.0f}"),
            *((f"  {k}", f"{v:,}") for k, v in sorted(report.by_kind.items())),
        ):
            table.add_row(name, value)
        console.print(table)
    if report.failed or report.acknowledged != report.sent or report.stopped_at is not None:
        for error in report.errors[:5]:
            console.print(f"[red]{error}[/red]")
        console.print(f"[red]{report.describe_unsent()}[/red] (positions in the seeded workload)")
        raise typer.Exit(1)
