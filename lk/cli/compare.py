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


def _pairs(values: list[str], option: str, form: str) -> dict[str, str]:
    out = {}
    for item in values:
        name, sep, value = item.partition("=")
        if not sep:
            raise typer.BadParameter(f"{option} wants {form}, got {item!r}")
        out[name.strip()] = value.strip()
    return out


def _check_own(change: dict[str, Any], counts: dict[str, str]) -> None:
    """Your own views: a logic change is needed, and every view named must be registered."""
    from lk.cli.common import platform

    if not change:
        raise typer.BadParameter(
            "with --history, say the logic change: --change VIEW.SETTING=VALUE",
            param_hint="--change",
        )
    names = platform(settings()).registry.names()
    for name, option in [
        *((c, "--change") for c in change if "." in c),
        *((c, "--count") for c in counts),
    ]:
        view = name.partition(".")[0]
        if view not in names:
            raise typer.BadParameter(
                f"no view {view!r} (views: {', '.join(names)})", param_hint=option
            )


def compare_command(
    out: Annotated[Path, Opt(help="Folder for results.json, report.html, summary.md.")],
    events: Annotated[int, Opt(help="History: events in the log before the live phase.")] = 20_000,
    seed: Annotated[int, Opt(help="Seed of the workload (repeats use seed+1, ...).")] = 42,
    rate: Annotated[float, Opt(help="Live phase: events/s from the generator.")] = 200.0,
    live_seconds: Annotated[float, Opt(help="Length of the live phase.")] = 60.0,
    change: Annotated[
        list[str] | None,
        Opt(
            help="The logic change, SETTING=VALUE or, for your own views, VIEW.SETTING=VALUE "
            "(repeatable; default for the shop: tumbling_window=5 minutes)."
        ),
    ] = None,
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
    floor: Annotated[
        bool,
        Opt(
            "--floor/--no-floor",
            help="Also run the views floor (read, decode, de-duplicate, compute the views, "
            "one commit) over the same workload: the least any design pays on this machine.",
        ),
    ] = True,
    history: Annotated[
        Path | None,
        Opt(
            help="Your own events: a file replayed into the log first (as lk replay does).",
            exists=True,
            dir_okay=False,
        ),
    ] = None,
    live: Annotated[
        Path | None,
        Opt(
            help="With --history: the file the live phase replays at --rate, in its own order "
            "(default: the last --live-fraction of the history's rows).",
            exists=True,
            dir_okay=False,
        ),
    ] = None,
    live_fraction: Annotated[
        float, Opt(help="With --history and no --live: share of its rows replayed live.")
    ] = 0.25,
    count: Annotated[
        list[str] | None,
        Opt(
            help="With --history: VIEW=COLUMN, the view's column counting events per window "
            "(checked against the files; repeatable)."
        ),
    ] = None,
    probe_every: Annotated[
        int, Opt(min=1, help="Live phase: a freshness probe after every N rows.")
    ] = 20,
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
    """Run one workload through Lambda and Kappa, checked independently; write the report.

    Without --history: the seeded shop workload, with the oracle as referee. With
    --history FILE: your own events and views as configured (lk.yaml / LK_CONFIG), the
    views checked against a plain count of your files.
    """
    from compare.options import DESIGNS, CompareOptions
    from compare.run import run_compare
    from measure.machine import broker

    changes = _change(change or ([] if history else ["tumbling_window=5 minutes"]))
    if history is not None:
        _check_own(changes, _pairs(count or [], "--count", "VIEW=COLUMN"))
    opts = CompareOptions(
        history=history,
        live=live,
        live_fraction=live_fraction,
        counts=_pairs(count or [], "--count", "VIEW=COLUMN"),
        probe_every=probe_every,
        events=events,
        seed=seed,
        rate=rate,
        live_seconds=live_seconds,
        change=changes,
        repeat=repeat,
        late_fraction=late_fraction,
        sustainable=sustainable,
        sustainable_start=sustainable_start,
        sustainable_trials=sustainable_trials,
        sustainable_seconds=sustainable_seconds,
        scaling=tuple(int(n) for n in scaling.split(",")) if scaling else (),
        floor=floor,
        order=(first, *(design for design in DESIGNS if design != first)),
    )
    config = settings()
    with ExitStack() as stack:
        if own_broker:
            tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="lk-compare-")))
            config = stack.enter_context(broker(None, tmp)).model_copy(
                update={"spark": config.spark, "events": config.events, "views": config.views}
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

        on = f"{history}" if history else "the shop generator"
        console.rule(f"lk compare on {on}: {' then '.join(opts.order)}, {opts.repeat} seed(s)")
        results = run_compare(config, opts, out, narrate)
    console.rule("verdict")
    for line in results.get("headline") or results["verdict"]:
        console.print(f"- {line}")
    console.print(f"\nreport: [bold]{(out / 'report.html').resolve()}[/bold]")
