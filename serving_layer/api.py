"""The HTTP read API: presented views as JSON, served from memory (no Spark per request).

Endpoints:

* ``GET /health``: ``status`` (``ok`` once views are loaded, else 503 ``not_ready``),
  ``mode``, the serving ``source``, and per view the served table ``version``,
  ``refreshed_at`` and row count.
* ``GET /views``: every registered view with its key, columns and served version.
* ``GET /views/{name}?<column>=<value>&limit=N``: rows whose columns equal the given
  values (each parsed to its column's type), in the view's order. Unknown view: 404;
  unknown column or a value that is not of the column's type: 400. A view nobody asked
  for in ``serving.idle_after`` is reloaded first (the request waits; 503 if that takes
  over a minute).

Rows are JSON objects with timestamps as ISO-8601 UTC strings ending in ``Z`` and
decimals as numbers. View responses carry ``X-Table-Version``, ``X-Refreshed-At``
(when that version was loaded), ``X-Checked-At`` and ``X-Serving-Source`` headers,
and an ``ETag`` naming the served table and version: a poller that sends it back in
``If-None-Match`` is answered ``304 Not Modified``, with no body, until a newer version
is served.
A :class:`~serving_layer.refresh.Refresher` keeps the copies current in the background.

Bodies are written with orjson, not through FastAPI's response models (a view of many
rows is serialised per request); the models below document every answer in the
OpenAPI description at ``/openapi.json``, which the tests hold the API to (schemathesis).
"""

from __future__ import annotations

import gc
import zlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Any

import orjson
from fastapi import FastAPI, HTTPException, Request
from fastapi import Path as PathParam
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import Response
from pydantic import BaseModel

from serving_layer.refresh import Refresher, ServedState
from serving_layer.snapshot import FilterValueError, ViewSnapshot, render
from views.registry import UnknownViewError

_HEALTH_FIELDS = ("served", "version", "rows", "refreshed_at", "behind", "reason")
RELOAD_WAIT_S = 60.0  # how long a request for an idle view waits for its reload


class Problem(BaseModel):
    """Why a request was refused, or could not be answered yet."""

    detail: str


class Column(BaseModel):
    """A presented column and its Spark type."""

    name: str
    type: str


class ViewInfo(BaseModel):
    """A registered view: its key, columns and what is served of it."""

    name: str
    key: list[str]
    columns: list[Column] | None
    version: int | None
    rows: int | None
    refreshed_at: str | None
    served: bool
    behind: bool
    reason: str | None


class ViewHealth(BaseModel):
    """What ``/health`` says of one view."""

    served: bool
    version: int | None
    rows: int | None
    refreshed_at: str | None
    behind: bool
    reason: str | None


class Health(BaseModel):
    """Readiness (``ok`` once views are loaded), mode, serving source, each view."""

    status: str
    mode: str | None
    source: str | None
    checked_at: str | None
    refresh_interval_s: float
    error: str | None
    views: dict[str, ViewHealth]


def _documented(model: type[BaseModel] | Any, description: str) -> dict[str, Any]:
    return {"model": model, "description": description}


_REFUSED: dict[int | str, dict[str, Any]] = {
    400: _documented(Problem, "an unknown column, or a value not of the column's type"),
    404: _documented(Problem, "no view of that name"),
    503: _documented(Problem, "the view is not loaded yet, or is being reloaded"),
}
_VERSION_HEADERS = {
    name: {"description": what, "schema": {"type": "string"}}
    for name, what in {
        "X-Table-Version": "the served table's Delta version",
        "X-Refreshed-At": "when that version was loaded",
        "X-Checked-At": "when the serving source was last checked",
        "X-Serving-Source": "what is served (batch run, lane, Kappa version)",
        "ETag": "the served table and version; send it in If-None-Match to poll cheaply",
    }.items()
}


def entity_tag(snap: ViewSnapshot) -> str:
    """An ETag for what ``snap`` serves: the same rows for a URL while it stays the same.

    The table is part of it, not only the version: a Lambda lane's epoch and a batch run
    are different tables whose versions can coincide.
    """
    return f'"{zlib.crc32(str(snap.table).encode()):08x}-{snap.version}"'


def _json(body: Any, status_code: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(
        orjson.dumps(body), status_code=status_code, media_type="application/json", headers=headers
    )


def _time(value: datetime | None) -> str | None:
    return None if value is None else render(value)


def _view_info(state: ServedState, name: str, key: tuple[str, ...]) -> dict[str, Any]:
    snap = state.views.get(name)
    return {
        "name": name,
        "key": list(key),
        "columns": None
        if snap is None
        else [{"name": c.name, "type": c.type} for c in snap.columns],
        "version": None if snap is None else snap.version,
        "rows": None if snap is None else len(snap),
        "refreshed_at": None if snap is None else _time(snap.refreshed_at),
        "served": snap is not None,
        "behind": name in state.behind,
        "reason": state.missing.get(name) if snap is None else None,
    }


def _limit(text: str) -> int:
    if not text.strip().isdigit():
        raise HTTPException(400, f"limit must be a non-negative integer, got {text!r}")
    return int(text)


def _filters(snap: ViewSnapshot, request: Request) -> tuple[dict[str, Any], int | None]:
    """Typed equality filters and the limit from the query string (400 on a bad one)."""
    filters: dict[str, Any] = {}
    limit: int | None = None
    for name, text in request.query_params.multi_items():
        if name == "limit":
            limit = _limit(text)
            continue
        column = snap.column(name)
        if column is None:
            known = ", ".join(c.name for c in snap.columns)
            raise HTTPException(
                400, f"unknown column {name!r} for view {snap.name!r}; columns: {known}"
            )
        if name in filters:
            raise HTTPException(400, f"column {name!r} is filtered more than once")
        try:
            filters[name] = column.value(text)
        except FilterValueError as err:
            raise HTTPException(400, str(err)) from None
    return filters, limit


def _tags(header: str) -> set[str]:
    """The entity tags of an ``If-None-Match`` header (weak ones compare as strong)."""
    return {tag.strip().removeprefix("W/") for tag in header.split(",") if tag.strip()}


def create_app(refresher: Refresher) -> FastAPI:
    """Build the read API; its lifespan starts and stops the background refresher.

    Args:
        refresher: what keeps the served snapshots current (``Platform.refresher``).

    Returns:
        The FastAPI application; ``app.state.refresher`` is its refresher.
    """

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        refresher.start()
        # What exists by now (the modules, Spark's client, the app) lives as long as the
        # process: out of Python's full collections, which otherwise walk it all (65 ms
        # each, one or two per reload of a 15,000-row view: docs/benchmarks.md, "Serving
        # reload"). Unfrozen at the end: a process may start the app again (tests).
        gc.collect()
        gc.freeze()
        try:
            yield
        finally:
            refresher.stop()
            gc.unfreeze()

    app = FastAPI(
        title="lk serving layer",
        summary="Presented views of the Lambda/Kappa platform, served from memory.",
        lifespan=lifespan,
    )
    app.state.refresher = refresher
    views = refresher.registry

    @app.get(
        "/health",
        response_class=Response,
        responses={
            200: _documented(Health, "every view is loaded"),
            503: _documented(Health, "not ready: a view is not loaded yet"),
        },
    )
    async def health() -> Response:
        """Readiness, mode, serving source and the served version of every view."""
        state = refresher.state
        body: dict[str, Any] = {
            "status": "ok" if state.ready else "not_ready",
            "mode": state.mode,
            "source": state.source,
            "checked_at": _time(state.checked_at),
            "refresh_interval_s": refresher.interval,
            "error": state.error,
            "views": {},
        }
        for view in views:
            info = _view_info(state, view.name, view.key)
            body["views"][view.name] = {k: info[k] for k in _HEALTH_FIELDS}
        return _json(body, 200 if state.ready else 503)

    @app.get(
        "/views",
        response_class=Response,
        responses={200: _documented(list[ViewInfo], "every registered view")},
    )
    async def list_views() -> Response:
        """Every registered view: key columns, presented columns, served version."""
        state = refresher.state
        return _json([_view_info(state, v.name, v.key) for v in views])

    @app.get(
        "/views/{name}",
        response_class=Response,
        responses={
            200: {
                **_documented(list[dict[str, Any]], "the matching rows, in the view's order"),
                "headers": _VERSION_HEADERS,
            },
            304: {
                "description": "the served rows are those of the ETag sent",
                "headers": _VERSION_HEADERS,
            },
            **_REFUSED,
        },
        openapi_extra={
            "parameters": [
                {
                    "name": "limit",
                    "in": "query",
                    "required": False,
                    "description": "at most this many rows",
                    "schema": {"type": "integer", "minimum": 0},
                },
                {
                    "name": "If-None-Match",
                    "in": "header",
                    "required": False,
                    "description": "an ETag of an earlier answer: 304 while it is still served",
                    "schema": {"type": "string"},
                },
            ]
        },
    )
    async def read(
        request: Request,
        name: str = PathParam(
            description="a registered view; filter its rows with ``column=value`` queries",
            json_schema_extra={"enum": [v.name for v in views]},
        ),
    ) -> Response:
        """Rows of view ``name`` equal to the query's ``column=value`` filters."""
        try:
            views.get(name)
        except UnknownViewError as err:
            raise HTTPException(404, err.args[0]) from None
        state = refresher.ask(name)
        if name in state.behind:  # idle until now: wait for its reload, off the event loop
            state = await run_in_threadpool(refresher.wait_reloaded, name, RELOAD_WAIT_S)
            if name in state.behind:
                raise HTTPException(503, f"view {name!r} is being reloaded; ask again")
        snap = state.views.get(name)
        if snap is None:
            reason = state.missing.get(name) or state.error or "the view is not loaded yet"
            raise HTTPException(503, f"view {name!r} is not available: {reason}")
        filters, limit = _filters(snap, request)
        headers = {
            "X-Table-Version": str(snap.version),
            "X-Refreshed-At": render(snap.refreshed_at),
            "X-Checked-At": _time(state.checked_at) or "",
            "X-Serving-Source": state.source or "",
            "ETag": entity_tag(snap),
        }
        sent = _tags(request.headers.get("if-none-match", ""))
        if headers["ETag"] in sent or "*" in sent:
            return Response(status_code=304, headers=headers)
        if all(k in filters for k in snap.key):  # a point query: microseconds
            rows = snap.select(filters, limit)
        else:  # may render many rows for the first time: off the event loop
            rows = await run_in_threadpool(snap.select, filters, limit)
        return _json(rows, headers=headers)

    return app
