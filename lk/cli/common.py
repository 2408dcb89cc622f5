"""What every ``lk`` command shares: settings loading, the console, clean failures."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import typer
from rich.console import Console

from config.settings import ConfigError, Settings, load_settings

if TYPE_CHECKING:
    from designs.platform import Platform

console = Console()
err_console = Console(stderr=True)


def settings() -> Settings:
    """Load the configuration or exit with the offending field named."""
    try:
        return load_settings()
    except ConfigError as err:
        err_console.print(f"[red]config error:[/red] {err}")
        raise typer.Exit(2) from None


def platform(config: Settings | None = None) -> Platform:
    """The platform the configuration builds.

    A schema or view module that is wrong exits 2 with its name and the problem, before
    any Spark session starts.
    """
    from rich.markup import escape

    from designs.platform import build
    from event_log.contract import ContractError
    from views.loader import ViewModuleError

    config = config or settings()
    try:
        return build(config)
    except (ContractError, ViewModuleError) as err:
        err_console.print(f"[red]config error:[/red] {escape(str(err))}")
        raise typer.Exit(2) from None


@contextmanager
def failures_as_exit(*errors: type[BaseException]) -> Iterator[None]:
    """Turn the expected errors of a command into a red message and exit code 1."""
    try:
        yield
    except errors as err:
        err_console.print(f"[red]error:[/red] {err}")
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
