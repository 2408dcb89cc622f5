"""``lk serve``: the HTTP read API (FastAPI on uvicorn), views served from memory."""

from __future__ import annotations

from typing import Annotated

import typer

from lk.cli.common import console, settings


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
            "(default: serving.refresh_interval, 2 s)."
        ),
    ] = None,
    access_log: Annotated[bool, typer.Option(help="Log every request.")] = False,
) -> None:
    """Serve the views over HTTP: GET /health, /views, /views/{name}?col=value&limit=N."""
    import uvicorn

    from lk.wiring import build
    from serving_layer.api import create_app

    config = settings()
    app = create_app(build(config).refresher(interval=refresh_interval))
    host = host or config.serving.host
    port = port or config.serving.port
    console.print(
        f"serving {config.mode} views on http://{host}:{port} "
        "(views load in the background; GET /health says when they are ready)"
    )
    uvicorn.run(app, host=host, port=port, access_log=access_log, log_level="info")
