"""``lk chaos``: inject faults into a seeded workload and count what was lost or doubled."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from lk.cli.common import console, progress_bar, settings


def chaos_command(
    runs: Annotated[int, typer.Option(min=1, help="Passes over every scenario.")] = 1,
    seed: Annotated[int, typer.Option(help="Run i draws its fault moments from seed + i.")] = 17,
    out: Annotated[Path, typer.Option(help="Where chaos.json and chaos.md go.")] = Path(
        "benchmarks/results"
    ),
    scenario: Annotated[
        list[str] | None, typer.Option(help="Only these scenarios (repeatable).")
    ] = None,
    events: Annotated[int, typer.Option(min=100, help="Events per workload.")] = 2_000,
    workdir: Annotated[
        Path, typer.Option(help="Scratch folder: the harness's broker, tables, child logs.")
    ] = Path(".lk/chaos"),
    resume: Annotated[
        bool,
        typer.Option(
            help="Go on with the pass whose chaos.json is in OUT (same --runs, --seed, "
            "--events): the scenario runs it recorded are kept and not run again."
        ),
    ] = False,
) -> None:
    """Kill the speed layer, batch layer, Kappa reprocess and brokers at random moments.

    Every scenario runs on a broker of its own (started under WORKDIR, stopped at the
    end) and ends by comparing every serving view with the oracle, or by counting every
    record back from the log. Exit code 1 if anything was lost, doubled or unexplained.
    """
    import shutil

    from chaos import results
    from chaos.runner import open_bench, run_all, scenarios

    config = settings()
    names = scenario or list(scenarios())
    unknown = sorted(set(names) - set(scenarios()))
    if unknown:
        console.print(f"[red]unknown scenario(s) {unknown}; known: {list(scenarios())}[/red]")
        raise typer.Exit(2)
    earlier = results.resumed(out, seed=seed, runs=runs, events=events) if resume else []
    if earlier:
        console.print(f"resuming: {len(earlier)} scenario run(s) already in {out / 'chaos.json'}")
    shutil.rmtree(workdir, ignore_errors=True)
    with (
        progress_bar() as progress,
        open_bench(config, workdir, events) as bench,
    ):
        done = {(o.scenario, o.seed) for o in earlier}
        task = progress.add_task("chaos", total=runs * len(names), completed=len(done))
        seen: list[results.Outcome] = list(earlier)

        def show(outcome: results.Outcome) -> None:
            seen.append(outcome)
            results.write(seen, out, seed=seed, runs=runs, events=events, complete=False)
            mark = "[green]clean[/green]" if outcome.clean else "[red]NOT CLEAN[/red]"
            progress.console.print(
                f"{outcome.scenario} seed {outcome.seed}: {mark} "
                f"({outcome.seconds:.0f} s) {'; '.join(outcome.notes)}"
                + (f"\n[red]{outcome.error}[/red]" if outcome.error else "")
            )
            progress.advance(task)

        run_all(bench, seed, runs, names, on_outcome=show, done=done)
    outcomes = seen  # the resumed runs and this run's, in order
    json_path, md_path = results.write(outcomes, out, seed=seed, runs=runs, events=events)
    table = Table(title=f"lk chaos: {runs} run(s), seed {seed}")
    for column in ("scenario", *results.COLUMNS):
        table.add_column(
            column.replace("_", " "), justify="left" if column == "scenario" else "right"
        )
    for name, row in results.summarize(outcomes).items():
        table.add_row(name, *(f"{row[c]:,}" for c in results.COLUMNS))
    console.print(table)
    console.print(f"written: {json_path}, {md_path}")
    if not all(o.clean for o in outcomes):
        raise typer.Exit(1)
