"""``lk infra``: fetch jars, start/stop/inspect the local Kafka broker."""

from __future__ import annotations

import typer

app = typer.Typer(help="Fetch jars and run the local Kafka broker.", no_args_is_help=True)
