"""The ``lk`` command line: one typer app, one sub-command module per concern."""

from __future__ import annotations

import typer
from rich.markup import escape

from lk.cli import airflow, infra, kappa
from lk.cli.alerts import alerts_command
from lk.cli.batch import batch_command
from lk.cli.chaos import chaos_command
from lk.cli.check import check_command
from lk.cli.common import Commands
from lk.cli.compare import compare_command
from lk.cli.dashboard import dashboard_command
from lk.cli.produce import produce_command
from lk.cli.query import query_command
from lk.cli.replay import replay_command
from lk.cli.serve import serve_command
from lk.cli.speed import speed_command, status_command
from lk.cli.views import views_command

app = typer.Typer(
    name="lk",
    help="Lambda-vs-Kappa reference platform: Kafka log, Spark views, Delta tables.",
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
    cls=Commands,  # the platform's errors become a message and an exit code there
)
app.add_typer(infra.app, name="infra")
app.command("produce")(produce_command)
app.command("replay")(replay_command)
app.command("views")(views_command)
app.command("check")(check_command)
app.command("batch")(batch_command)
app.command("query")(query_command)
app.command("serve")(serve_command)
app.command("speed")(speed_command)
app.command("status")(status_command)
app.command("alerts")(alerts_command)
app.add_typer(kappa.app, name="kappa")
app.command("chaos")(chaos_command)
app.add_typer(airflow.app, name="airflow")
app.command("compare")(compare_command)
app.command("dashboard")(dashboard_command)


def main() -> None:
    """Console-script entry point; an absent broker is a message (``Commands`` maps the rest)."""
    from lk.cli.common import err_console

    try:
        app()
    except Exception as err:
        from event_log.kafka_source import log_unreachable

        if not log_unreachable(err):
            raise
        err_console.print(
            f"[red]Kafka out of reach:[/red] {escape(str(err).splitlines()[0])}. Is the broker "
            "up (`lk infra up`), and kafka.bootstrap_servers (LK_KAFKA__BOOTSTRAP_SERVERS) right?"
        )
        raise SystemExit(1) from None


if __name__ == "__main__":
    main()
