"""``lk serve``: the HTTP read API (FastAPI on uvicorn), views served from memory."""

from __future__ import annotations

import time
from typing import Annotated

import typer

from config.settings import Settings
from lk.cli.common import console, err_console, platform, settings


def serve_command(
    host: Annotated[
        str | None, typer.Option(help="Interface to listen on (default: serving.host, 127.0.0.1).")
    ] = None,
    port: Annotated[
        int | None, typer.Option(help="TCP port (default: serving.port, 8000).")
    ] = None,
    refresh_interval: Annotated[
        float | None,
        typer.Option(
            help="Seconds between checks for new table versions "
            "(default: serving.refresh_interval, 0.1 s)."
        ),
    ] = None,
    access_log: Annotated[bool, typer.Option(help="Log every request.")] = False,
    detach: Annotated[
        bool,
        typer.Option(
            help="Run in the background (a PID file, like `lk speed`) and return once the "
            "views are loaded; `lk query` then answers from it in milliseconds."
        ),
    ] = False,
    stop: Annotated[bool, typer.Option(help="Stop the background `lk serve`.")] = False,
) -> None:
    """Serve the views over HTTP: GET /health, /views, /views/{name}?col=value&limit=N."""
    from lk import detached

    config = settings()
    if stop:
        stopped = detached.stop(config, detached.SERVE_PROCESS)
        console.print("stopped lk serve" if stopped else "no lk serve was running")
        return
    if detach:
        args = ["serve"]
        for flag, value in (("--host", host), ("--port", port)):
            if value is not None:
                args += [flag, str(value)]
        if refresh_interval is not None:
            args += ["--refresh-interval", str(refresh_interval)]
        pid = detached.start(config, detached.SERVE_PROCESS, args)
        _wait_until_ready(config, host, port, pid)
        return
    import uvicorn

    from serving_layer.api import create_app

    host = host or config.serving.host
    port = port or config.serving.port
    with detached.claim(config, detached.SERVE_PROCESS):
        app = create_app(platform(config).refresher(interval=refresh_interval))
        console.print(
            f"serving {config.mode} views on http://{host}:{port} "
            "(views load in the background; GET /health says when they are ready)"
        )
        uvicorn.run(app, host=host, port=port, access_log=access_log, log_level="info")


def _wait_until_ready(config: Settings, host: str | None, port: int | None, pid: int) -> None:
    """Wait (with a spinner) until the background server's views are loaded."""
    from lk import detached
    from serving_layer.client import health

    url = f"http://{host or config.serving.host}:{port or config.serving.port}"
    with console.status(f"lk serve (pid {pid}) is loading the views ..."):
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            if detached.running(config, detached.SERVE_PROCESS) is None:
                tail = detached.output_tail(config, detached.SERVE_PROCESS)
                err_console.print(f"[red]error:[/red] lk serve exited:\n{tail}")
                raise typer.Exit(1)
            body = health(url)
            if body is not None and body.get("status") == "ok":
                console.print(f"serving {body['source']} on {url} (pid {pid})")
                console.print("stop it with: lk serve --stop")
                return
            time.sleep(0.5)
    err_console.print(f"[yellow]lk serve (pid {pid}) still loading after 300 s[/yellow]")
