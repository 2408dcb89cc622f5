"""``lk airflow``: start, stop and inspect the local Airflow 3 that schedules the DAGs."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.table import Table

from infra import airflow
from lk.cli import common
from lk.cli.common import console

app = typer.Typer(help="Run the local Airflow 3 that schedules the DAGs.", no_args_is_help=True)


def _print_status(status: airflow.AirflowStatus) -> None:
    table = Table("component", "pid", "process", "health")
    health_key = {"dag-processor": "dag_processor", "api-server": "metadatabase"}
    for proc in status.processes:
        state = "[green]running[/green]" if proc.running else "[red]stopped[/red]"
        key = health_key.get(proc.component, proc.component)
        table.add_row(proc.component, str(proc.pid or "-"), state, status.health.get(key, "-"))
    console.print(f"Airflow {status.url}  home {status.home}")
    console.print(table)
    if status.last_runs:
        runs = Table("DAG", "last run", "type", "state", "ended")
        for dag_id, run in status.last_runs.items():
            if run is None:
                runs.add_row(dag_id, "-", "-", "never ran", "-")
            else:
                runs.add_row(
                    dag_id, run["dag_run_id"], run["run_type"], run["state"], run["end_date"] or "-"
                )
        console.print(runs)


@app.command()
def up() -> None:
    """Start the API server, scheduler, DAG processor and triggerer; wait until healthy."""
    settings = common.infra_settings()
    current = airflow.up(settings)
    user, password = airflow.credentials(settings)
    _print_status(current)
    console.print(
        f"UI: [bold]{current.url}[/bold]  login [bold]{user}[/bold] / [bold]{password}[/bold] "
        f"(kept in {settings.airflow.home / 'passwords.json'}; set airflow.password to choose)"
    )
    console.print("New DAGs start paused: unpause them in the UI to let the schedules run.")


@app.command()
def down() -> None:
    """Stop every Airflow process `up` started (process groups, SIGTERM then SIGKILL)."""
    settings = common.infra_settings()
    stopped = airflow.down(settings)
    console.print(f"stopped {len(stopped)} processes" if stopped else "Airflow was not running")


@app.command()
def status(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")] = False,
) -> None:
    """Show each Airflow process, the API's health view and the DAGs' last runs."""
    settings = common.infra_settings()
    current = airflow.status(settings)
    if as_json:
        typer.echo(json.dumps(current.to_dict(), indent=2))
    else:
        _print_status(current)
