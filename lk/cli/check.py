"""``lk check FILE``: a served view's counts per window against a plain count of the file."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from lk.cli.common import console, err_console, platform, settings

Opt = typer.Option


def check_command(
    file: Annotated[typer.FileText, typer.Argument(help="The file you replayed.")],
    view: Annotated[str, Opt(help="A windowed view with a count column.")],
    count_column: Annotated[str, Opt(help="The view's column counting events per row.")],
    window: Annotated[str, Opt(help="The view's window size, e.g. '5 minutes'.")],
    slide: Annotated[str | None, Opt(help="Hopping views: the slide.")] = None,
    as_json: Annotated[bool, Opt("--json", help="Print the comparison as JSON.")] = False,
) -> None:
    """Compare a view's events per window with the oracle's count of the file (pandas).

    The oracle runs none of the platform's code and none of yours: it keeps the rows
    whose required fields are set, numbers are numbers and time parses, each id once.
    It does not evaluate the contract's extra rules or a lane's lateness; both only
    remove events. So: served above the file's count, or a served window the file does
    not have, is an error (exit 1); served below it is reported as explained only by
    rules or lateness.
    """
    from pathlib import Path

    from pyspark.sql import functions as F

    from compare.own_check import file_spec
    from config.settings import parse_duration
    from lake.spark import build_session
    from oracle.file_counts import counts_per_window

    config = settings()
    built = platform(config)
    contract = built.contract
    spec = file_spec(Path(file.name), contract)
    size, step = parse_duration(window), parse_duration(slide) if slide else None
    expected = counts_per_window(spec, size, step)
    spark = build_session(config, app_name="lk-check")
    served = {
        r[0]: int(r[1])
        for r in built.read(spark, view).groupBy("window_start").agg(F.sum(count_column)).collect()
    }
    rows = []
    for start in sorted(set(expected) | set(served)):
        want, got = expected.get(start, 0), served.get(start, 0)
        verdict = "equal" if want == got else ("fewer" if got < want else "MORE")
        rows.append(
            {"window_start": start.isoformat(), "file": want, "served": got, "verdict": verdict}
        )
    counts = {v: sum(1 for r in rows if r["verdict"] == v) for v in ("equal", "fewer", "MORE")}
    if as_json:
        console.print_json(json.dumps({"view": view, "windows": counts, "rows": rows}))
    else:
        rules = ", ".join(r.reason for r in contract.rules) or "none"
        console.print(
            f"{view}: {len(rows)} windows; {counts['equal']} equal to the file's count, "
            f"{counts['fewer']} fewer (rules: {rules}; or lateness), "
            f"{counts['MORE']} more (errors)"
        )
        for row in rows:
            if row["verdict"] != "equal":
                console.print(
                    f"  {row['window_start']}: file {row['file']}, served {row['served']}"
                )
    if counts["MORE"]:
        err_console.print(
            "[red]served above the file's count: events counted twice or invented[/red]"
        )
        raise typer.Exit(1)
