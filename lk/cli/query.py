"""``lk query``: read a serving view as a table, JSON lines or CSV.

Asked of a running ``lk serve`` when there is one (milliseconds); otherwise a Spark
session of its own reads the tables (seconds: the JVM starts first).
"""

from __future__ import annotations

import csv
import sys
from typing import Annotated, Any, Literal

import orjson
import typer
from rich.table import Table

from config.settings import Settings
from lk.cli.common import console, err_console, platform, settings

Format = Literal["table", "json", "csv"]


def query_command(
    view: Annotated[str, typer.Argument(help="View name, e.g. revenue_by_category.")],
    filters: Annotated[
        list[str] | None,
        typer.Option(
            "--filter", help="COLUMN=VALUE, rows equal to it (repeatable), e.g. category=books."
        ),
    ] = None,
    where: Annotated[
        str | None,
        typer.Option(help='A Spark SQL filter, e.g. "revenue > 100" (reads with Spark).'),
    ] = None,
    output: Annotated[Format, typer.Option("--format")] = "table",
    limit: Annotated[int | None, typer.Option(help="At most this many rows.")] = None,
) -> None:
    """Print a serving view (the same rows the SQL views and the HTTP API give)."""
    config = settings()
    equal = dict(_pair(text) for text in filters or [])
    if where is None and (answer := _from_server(config, view, equal, limit)) is not None:
        columns, rows = answer
    else:
        columns, rows = _from_spark(config, view, equal, where, limit)
    _print(view, columns, rows, output)


def _pair(text: str) -> tuple[str, str]:
    column, sep, value = text.partition("=")
    if not sep or not column:
        raise typer.BadParameter(f"expected COLUMN=VALUE, got {text!r}", param_hint="--filter")
    return column, value


def _from_server(
    config: Settings, view: str, equal: dict[str, str], limit: int | None
) -> tuple[list[str], list[list[Any]]] | None:
    """The rows from the background ``lk serve``, or None if none runs (or is loading)."""
    from lk import detached
    from serving_layer import client

    if detached.running(config, detached.SERVE_PROCESS) is None:
        return None
    url = f"http://{config.serving.host}:{config.serving.port}"
    rows = client.read_rows(url, view, equal, limit)  # a ServerError says what the server said
    if rows is None:
        err_console.print("[dim]lk serve has not loaded this view yet; reading with Spark[/dim]")
        return None
    columns = list(rows[0]) if rows else client.columns(url, view)
    return columns, [list(row.values()) for row in rows]


def _from_spark(
    config: Settings, view: str, equal: dict[str, str], where: str | None, limit: int | None
) -> tuple[list[str], list[list[Any]]]:
    """The rows read by a Spark session of this process, labelled final or provisional."""
    from pyspark.sql import functions as F

    from lake.spark import build_session
    from serving_layer.snapshot import to_json_value

    built = platform(config)
    spark = build_session(config, app_name="lk-query")
    frame = built.read(spark, view, with_status=True)
    for column, value in equal.items():
        frame = frame.where(F.col(column) == F.lit(value))
    if where:
        frame = frame.where(where)
    if limit is not None:
        frame = frame.limit(limit)
    return frame.columns, [[to_json_value(v) for v in row] for row in frame.collect()]


def _print(view: str, columns: list[str], rows: list[list[Any]], output: Format) -> None:
    if output == "json":
        for row in rows:
            sys.stdout.buffer.write(orjson.dumps(dict(zip(columns, row, strict=True))) + b"\n")
    elif output == "csv":
        writer = csv.writer(sys.stdout)
        writer.writerow(columns)
        writer.writerows(rows)
    else:
        table = Table(*columns, title=view)
        for row in rows:
            table.add_row(*("" if v is None else str(v) for v in row))
        console.print(table)
