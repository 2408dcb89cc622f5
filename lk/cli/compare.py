"""``lk compare``: Lambda against Kappa on one seeded workload, with the oracle as referee."""

from __future__ import annotations

import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.status import Status

from lk.cli.common import console, settings

Opt = typer.Option


def _change(values: list[str]) -> dict[str, Any]:
    pairs = {}
    for item in values:
        name, sep, value = item.partition("=")
        if not sep:
            raise typer.BadParameter(f"--change wants SETTING=VALUE, got {item!r}")
        pairs[name.strip().removeprefix("views.")] = value.strip()
    return pairs


def compare_command(
    out: Annotated[Path, Opt(help="Folder for results.json, report.html, summary.md.")],
    events: Annotated[int, Opt(help="History: events in the log before the live phase.")] = 20_000,
    seed: Annotated[int, Opt(help="Seed of the workload (repeats use seed+1, ...).")] = 42,
    rate: Annotated[float, Opt(help="Live phase: events/s from the generator.")] = 200.0,
    live_seconds: Annotated[float, Opt(help="Length of the live phase.")] = 60.0,
    change: Annotated[
        list[str], Opt(help="View setting of the logic change, SETTING=VALUE (repeatable).")
    ] = ["tumbling_window=5 minutes"],  # noqa: B006 - typer reads the default
    repeat: Annotated[int, Opt(help="Seeds to run; medians and spreads are reported.")] = 1,
    late_fraction: Annotated[float, Opt(help="Share of late events.")] = 0.02,
    sustainable: Annotated[bool, Opt(help="Also search each design's sustainable rate.")] = False,
    sustainable_start: Annotated[
        int, Opt(min=100, help="First rate of the sustainable search (doubles, halves, bisects).")
    ] = 2_000,
    sustainable_trials: Annotated[int, Opt(min=1, help="Trials of the sustainable search.")] = 4,
    sustainable_seconds: Annotated[
        float, Opt(min=1, help="Measured seconds of each trial, after a 60 s warm-up.")
    ] = 300.0,
    scaling: Annotated[
        str | None, Opt(help="History lengths for time to serve new logic, e.g. 250000,500000.")
    ] = None,
    first: Annotated[str, Opt(help="The design that runs first: lambda or kappa.")] = "lambda",
    own_broker: Annotated[
        bool,
        Opt(
            help="Run on a broker of its own (free ports, temp dir) instead of the configured one."
        ),
    ] = False,
    dashboard: Annotated[
        bool, Opt(help="Open the live page (lk dashboard) over both designs while it runs.")
    ] = False,
) -> None:
    """Run one seeded workload through Lambda, Kappa and the oracle; write the report."""
    from compare.options import DESIGNS, CompareOptions
    from compare.run import run_compare
    from measure.machine import broker

    opts = CompareOptions(
        events=events,
        seed=seed,
        rate=rate,
        live_seconds=live_seconds,
        change=_change(change),
        repeat=repeat,
        late_fraction=late_fraction,
        sustainable=sustainable,
        sustainable_start=sustainable_start,
        sustainable_trials=sustainable_trials,
        sustainable_seconds=sustainable_seconds,
        scaling=tuple(int(n) for n in scaling.split(",")) if scaling else (),
        order=(first, *(design for design in DESIGNS if design != first)),
    )
    config = settings()
    with ExitStack() as stack:
        if own_broker:
            tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="lk-compare-")))
            config = stack.enter_context(broker(None, tmp)).model_copy(
                update={"spark": config.spark}
            )
        if dashboard:
            from lk.cli.dashboard import beside

            out.mkdir(parents=True, exist_ok=True)
            stack.enter_context(beside(out))
        status: Status = stack.enter_context(console.status("starting"))

        def narrate(design: str, event: dict[str, Any]) -> None:
            message = event.get("message")
            if message:
                now = time.strftime("%H:%M:%S")
                console.print(f"[dim]{now}[/dim] [bold]{design}[/bold] {event['event']}: {message}")
                status.update(f"{design}: after {event['event']} ... (started {now})")

        console.rule(f"lk compare: {' then '.join(opts.order)}, {opts.repeat} seed(s)")
        results = run_compare(config, opts, out, narrate)
    console.rule("verdict")
    for line in results["verdict"]:
        console.print(f"- {line}")
    console.print(f"\nreport: [bold]{(out / 'report.html').resolve()}[/bold]")
