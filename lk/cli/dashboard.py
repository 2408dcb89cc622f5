"""``lk dashboard``: the live page over the running platform, or over an ``lk compare`` run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import webbrowser
from collections.abc import Iterator
from contextlib import contextmanager, suppress
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


@contextmanager
def beside(out: Path, port: int = DEFAULT_PORT, interval: float = 5.0) -> Iterator[str]:
    """``lk dashboard --compare-dir OUT`` in a process of its own while a comparison runs.

    Its Spark driver shares the machine with the design being measured: the figures of a
    watched run carry that load (``docs/comparison.md`` says so).
    """
    url = f"http://127.0.0.1:{port}/"
    log = (out / "dashboard.log").open("w")
    child = subprocess.Popen(
        [sys.executable, "-m", "lk.cli.app", "dashboard", "--compare-dir", str(out),
         "--port", str(port), "--interval", str(interval)],
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )  # fmt: skip
    console.print(f"live page over both designs: [bold]{url}[/bold] (log: {out / 'dashboard.log'})")
    with suppress(Exception):
        webbrowser.open(url)
    try:
        yield url
    finally:
        with suppress(ProcessLookupError):
            os.killpg(child.pid, signal.SIGTERM)
        try:
            child.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
        log.close()
