"""``lk query``: read a serving view as a table, JSON lines or CSV."""

from __future__ import annotations

import csv
import sys
from typing import Annotated, Literal

import orjson
import typer
from rich.table import Table

from lk.cli.common import console, err_console, settings


def query_command(
    view: Annotated[str, typer.Argument(help="View name, e.g. revenue_by_category.")],
    where: Annotated[
        str | None, typer.Option(help="A Spark SQL filter, e.g. \"category = 'books'\".")
    ] = None,
    output: Annotated[Literal["table", "json", "csv"], typer.Option("--format")] = "table",
    limit: Annotated[int | None, typer.Option(help="At most this many rows.")] = None,
) -> None:
    """Print a serving view (the same rows the SQL views and the HTTP API give)."""
    from lake.source import ViewNotReadyError
    from lk.spark import build_session
    from lk.wiring import build
    from serving_layer.snapshot import to_json_value
    from views.registry import UnknownViewError

    config = settings()
    spark = build_session(config, app_name="lk-query")
    try:
        frame = build(config).read(spark, view, with_status=True)
    except (UnknownViewError, ViewNotReadyError) as err:
        err_console.print(f"[red]error:[/red] {err}")
        raise typer.Exit(1) from None
    if where:
        frame = frame.where(where)
    if limit is not None:
        frame = frame.limit(limit)
    columns = frame.columns
    rows = [[to_json_value(v) for v in row] for row in frame.collect()]
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
