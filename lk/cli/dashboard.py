"""``lk dashboard``: the live page over the running platform, or over an ``lk compare`` run."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from lk.cli.common import console, settings

DEFAULT_PORT = 8765


def dashboard_command(
    host: Annotated[str, typer.Option(help="Interface to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port of the page.")] = DEFAULT_PORT,
    interval: Annotated[
        float, typer.Option(min=0.5, help="Seconds between two readings of each design.")
    ] = 2.0,
    compare_dir: Annotated[
        Path | None,
        typer.Option(
            help="Watch the designs of an `lk compare --out DIR` run (DIR) as they start, "
            "instead of the configured platform."
        ),
    ] = None,
    view: Annotated[str | None, typer.Option(help="The view whose rows the page shows.")] = None,
) -> None:
    """Serve a live page: lag, micro-batches, freshness, serving source, marks (read-only)."""
    import uvicorn

    from dashboard import targets
    from dashboard.app import Watcher, create_app
    from lk import detached

    config = settings()
    if compare_dir is not None:
        work = compare_dir / "work"
        watcher = Watcher(config, lambda: targets.compare_runs(work), interval, None, view)
        what = f"the designs of the comparison in {compare_dir}"
    else:
        configured = targets.configured(config)
        watcher = Watcher(
            config,
            lambda: configured,
            interval,
            lambda s: detached.running(s, detached.SPEED_PROCESS) is not None,
            view,
        )
        what = f"the {config.mode} platform"
    console.print(f"lk dashboard: {what} on http://{host}:{port} (Ctrl-C stops it)")
    uvicorn.run(create_app(watcher), host=host, port=port, log_level="warning")
