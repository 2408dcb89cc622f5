"""``lk alerts``: the bursts the alerts topic announces now (its latest value per burst)."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Annotated

import typer

from lk.cli.common import console, settings

Opt = typer.Option


def alerts_command(
    every_record: Annotated[
        bool, Opt("--history", help="Every record in log order, not the latest per burst.")
    ] = False,
    as_json: Annotated[bool, Opt("--json", help="Print the alerts as JSON.")] = False,
) -> None:
    """The alerts topic as a reader sees it (read_committed): open and retracted bursts."""
    from rich.table import Table

    from serving_layer.alerts import latest, read_records

    config = settings()
    records = read_records(config)
    alerts = [r.alert for r in records] if every_record else list(latest(records).values())
    if as_json:
        console.print_json(json.dumps([asdict(a) for a in alerts]))
        return
    opened = sum(1 for a in alerts if a.status == "open")
    title = f"{config.kafka.alerts_topic}: {opened} open, {len(alerts) - opened} retracted"
    table = Table(title=title)
    for column in ("user_id", "burst_at", "purchases", "status"):
        table.add_column(column)
    for a in alerts:
        table.add_row(str(a.user_id), a.burst_at, str(a.purchases), a.status)
    console.print(table)
