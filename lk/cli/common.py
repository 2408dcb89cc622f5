"""What every ``lk`` command shares: settings loading, the console, clean failures."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from typer._click import Context  # typer vendors click: its Context is what the group gets
from typer.core import TyperGroup

from config.errors import LkError
from config.settings import Settings, load_settings

if TYPE_CHECKING:
    from designs.platform import Platform

console = Console()
err_console = Console(stderr=True)


def progress_bar(*, remaining: bool = False, disable: bool = False) -> Progress:
    """The progress bar of long work: description, bar, done of total, time elapsed or left."""
    clock = TimeRemainingColumn() if remaining else TimeElapsedColumn()
    return Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        clock,
        console=console,
        disable=disable,
    )


def exit_for(error: LkError) -> typer.Exit:
    """Print the platform's error as one red line (then its details) and say how to exit."""
    err_console.print(f"[red]{error.label}:[/red] {escape(str(error))}")
    return typer.Exit(error.exit_code)


class Commands(TyperGroup):
    """The ``lk`` group: the one place the platform's errors become exit codes.

    Every command, sub-apps' too, runs inside this group's ``invoke``: an :class:`LkError`
    exits with its code and message, no traceback; any other exception is a bug and
    keeps its traceback.
    """

    def invoke(self, ctx: Context) -> Any:
        """Run the command; map the platform's errors."""
        try:
            return super().invoke(ctx)
        except LkError as error:
            raise exit_for(error) from None


def settings() -> Settings:
    """Load the configuration; a wrong field raises ``ConfigError`` (exit 2, field named)."""
    return load_settings()


def platform(config: Settings | None = None) -> Platform:
    """The platform the configuration builds.

    A schema or view module that is wrong raises (exit 2 with its name and the problem)
    before any Spark session starts.
    """
    from designs.platform import build

    return build(config or settings())


@contextmanager
def failures_as_exit(*errors: type[BaseException]) -> Iterator[None]:
    """Turn a library's errors a user can act on into a red message and exit code 1.

    Only for other packages' exceptions (a failed subprocess, Kafka's client); the
    platform's own derive from :class:`LkError` and need no wrapping.
    """
    try:
        yield
    except errors as err:
        err_console.print(f"[red]error:[/red] {escape(str(err))}")
        raise typer.Exit(1) from None


def infra_settings() -> Settings:
    """Settings for the commands that start services (``lk infra``, ``lk airflow``).

    Their library logging goes through rich, with the ``infra`` package's progress at
    INFO and kafka-python's start-up polling silenced; config errors exit 2.
    """
    import logging

    from rich.logging import RichHandler

    logging.basicConfig(
        level=logging.WARNING,
        format="%(message)s",
        handlers=[RichHandler(console=err_console, show_path=False, show_time=False)],
    )
    logging.getLogger("infra").setLevel(logging.INFO)
    logging.getLogger("kafka").setLevel(logging.CRITICAL)
    return settings()
