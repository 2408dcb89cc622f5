"""A small client of the read API, for ``lk query``: no Spark, no third-party imports.

A shell command that starts a SparkSession pays 10-20 s before its first row; asking a
running ``lk serve`` costs milliseconds, and it answers from the same presented rows.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from config.errors import LkError


class ServerError(LkError, RuntimeError):
    """The server answered with an error (unknown view, bad filter): its message."""


def _get(url: str, timeout: float) -> tuple[int, Any]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read() or b"null")


def health(base_url: str, timeout: float = 1.0) -> dict[str, Any] | None:
    """``GET /health`` (ready or not), or None if nothing answers at ``base_url``."""
    try:
        return _get(f"{base_url}/health", timeout)[1]
    except (OSError, ValueError):
        return None


def read_rows(
    base_url: str,
    view: str,
    filters: dict[str, str] | None = None,
    limit: int | None = None,
    timeout: float = 30.0,
) -> list[dict[str, Any]] | None:
    """The rows of ``view``; None if the server is unreachable or has not loaded it.

    Raises:
        ServerError: the request itself is wrong (unknown view or column, bad value).
    """
    query = dict(filters or {})
    if limit is not None:
        query["limit"] = str(limit)
    url = f"{base_url}/views/{urllib.parse.quote(view)}"
    if query:
        url += "?" + urllib.parse.urlencode(query)
    try:
        status, body = _get(url, timeout)
    except (OSError, ValueError):
        return None
    if status == 200:
        return body
    if status == 503:
        return None
    detail = body.get("detail") if isinstance(body, dict) else body
    raise ServerError(str(detail))


def columns(base_url: str, view: str, timeout: float = 5.0) -> list[str]:
    """The presented columns of ``view`` (to print the header of an empty answer)."""
    try:
        _, views = _get(f"{base_url}/views", timeout)
    except (OSError, ValueError):
        return []
    for info in views:
        if info["name"] == view and info["columns"]:
            return [c["name"] for c in info["columns"]]
    return []
