"""The live page's server: a watcher thread reading every design, and three GET routes.

* ``GET /``: the page (polls the JSON below every two seconds);
* ``GET /api/state?view=NAME``: every design's newest reading and its series so far;
  ``view`` picks the view whose rows the page shows (read at the next reading);
* ``GET /plotly.min.js``: plotly's bundle from the installed ``plotly`` package (no CDN).

One SparkSession, started in the watcher thread, reads every design in turn; the server
answers from memory, so the page stays up while Spark starts or a part is down.
"""

from __future__ import annotations

import threading
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from functools import cache
from importlib.resources import files
from typing import Any

import orjson
from fastapi import FastAPI
from fastapi.responses import HTMLResponse, Response

from config.settings import Settings
from dashboard.history import History
from dashboard.sample import Probe, Sampler
from dashboard.targets import Target


class Watcher:
    """Reads every target every ``interval`` seconds into a :class:`History`."""

    def __init__(
        self,
        settings: Settings,
        targets: Callable[[], list[Target]],
        interval: float = 2.0,
        probe: Probe | None = None,
        view: str | None = None,
    ) -> None:
        self.settings = settings
        self.targets = targets
        self.interval = interval
        self.probe = probe
        self.view = view
        self.history = History()
        self.status = "starting Spark"
        self._samplers: dict[str, Sampler] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="lk-dashboard", daemon=True)

    def start(self) -> None:
        """Start reading in the background."""
        self._thread.start()

    def stop(self) -> None:
        """Stop after the reading under way; close the broker connections."""
        self._stop.set()
        self._thread.join(timeout=60)
        for sampler in self._samplers.values():
            sampler.close()

    def _run(self) -> None:
        from lake.spark import build_session

        try:
            spark = build_session(self.settings, app_name="lk-dashboard")
        except Exception as err:  # the page says Spark is down
            self.status = f"down: Spark did not start: {err}"
            return
        while not self._stop.is_set():
            try:
                targets = self.targets()
            except Exception as err:
                self.status = f"down: cannot list the designs: {err}"
                targets = []
            for target in targets:
                self._read(spark, target)
            if targets:
                self.status = "ok"
            elif self.status == "starting Spark":
                self.status = "waiting for a design to start"
            self._stop.wait(self.interval)

    def _read(self, spark: Any, target: Target) -> None:
        sampler = self._samplers.get(target.label)
        try:
            if sampler is None:
                sampler = self._samplers[target.label] = Sampler(
                    target.label, target.settings, self.probe
                )
            views = sampler.platform.registry.names()
            view = self.view if self.view in views else (views[0] if views else None)
            self.history.add(sampler.read(spark, view))
        except Exception as err:  # one design's failure leaves the others
            self.history.failed(target.label, f"{type(err).__name__}: {err}"[:400])

    def state(self) -> dict[str, Any]:
        """The JSON the page polls."""
        return {"now": time.time(), "watcher": self.status, **self.history.state()}


@cache
def _plotly_js() -> bytes:
    from plotly.offline import get_plotlyjs

    return get_plotlyjs().encode()


def create_app(watcher: Watcher) -> FastAPI:
    """The app over a watcher it starts and stops with the server."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        watcher.start()
        yield
        watcher.stop()

    app = FastAPI(title="lk dashboard", lifespan=lifespan)
    page = (files("dashboard") / "page.html").read_text()

    @app.get("/", response_class=HTMLResponse)
    def index() -> HTMLResponse:
        return HTMLResponse(page)

    @app.get("/api/state")
    def state(view: str | None = None) -> Response:
        if view:
            watcher.view = view
        body = orjson.dumps(watcher.state(), option=orjson.OPT_NON_STR_KEYS)  # partitions
        return Response(body, media_type="application/json")

    @app.get("/plotly.min.js")
    def plotly_js() -> Response:
        return Response(
            _plotly_js(),
            media_type="text/javascript",
            headers={"Cache-Control": "max-age=86400"},
        )

    return app
