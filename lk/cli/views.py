"""``lk views``: the registered views, their keys, windows, merge rules and where they live."""

from __future__ import annotations

import json
from typing import Annotated, TypedDict

import typer

from lk.cli.common import console, platform

Opt = typer.Option


class _Row(TypedDict):
    """One view as ``lk views`` lists it (a table row, or an object of the JSON)."""

    name: str
    keys: list[str]
    window: str
    merge_rule: str
    defined_in: str


def views_command(
    as_json: Annotated[bool, Opt("--json", help="Print the list as JSON.")] = False,
) -> None:
    """List the registered views (the configured view module, plus the built-ins it keeps)."""
    from rich.markup import escape
    from rich.table import Table

    from views.registry import defined_in

    built = platform()
    view_settings = built.settings.views
    rows: list[_Row] = [
        {
            "name": view.name,
            "keys": list(view.key),
            "window": view.describe_window(view_settings),
            "merge_rule": view.merge_rule,
            "defined_in": defined_in(view),
        }
        for view in built.registry
    ]
    if as_json:
        console.print_json(json.dumps({"events": built.contract.describe(), "views": rows}))
        return
    table = Table(title=escape(f"views over {built.contract.describe()}"), show_lines=True)
    for column in ("name", "keys", "window", "merge rule", "defined in"):
        table.add_column(column, overflow="fold")
    for row in rows:
        cells = (row["name"], ", ".join(row["keys"]), row["window"], row["merge_rule"])
        table.add_row(*map(escape, cells), escape(row["defined_in"]))
    console.print(table)
