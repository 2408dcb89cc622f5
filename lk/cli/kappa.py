"""``lk kappa``: reprocess into a new version, roll back, drop, list versions."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from lk import detached
from lk.cli.common import console, err_console, platform, progress_bar, settings

app = typer.Typer(help="Kappa versions: reprocess, rollback, drop.", no_args_is_help=True)


@app.command()
def reprocess() -> None:
    """Replay the whole retained log into version n+1, check it, then switch readers to it."""
    from designs.kappa.reprocess import reprocess
    from lake.spark import build_session

    config = settings()
    registry = platform(config).registry
    spark = build_session(config, app_name="lk-kappa")
    with (
        detached.claim(config, detached.KAPPA_WRITER),  # a rollback meanwhile refuses
        progress_bar() as progress,
    ):
        task = progress.add_task("replaying offsets", total=None)
        result = reprocess(
            spark,
            config,
            registry,
            on_progress=lambda done, total: progress.update(task, completed=done, total=total),
        )
    for version in result.abandoned:
        console.print(f"[yellow]dropped unfinished v{version} (other view settings)[/yellow]")
    resumed = "resumed the unfinished version; " if result.resumed else ""
    console.print(
        f"v{result.version} serves now ({resumed}replayed {result.offsets:,} offsets in "
        f"{result.seconds:.1f} s; previous: v{result.previous})"
    )
    console.print("  " + ", ".join(f"{step} {s:.1f} s" for step, s in result.steps.items()))
    if result.diff:
        console.print_json(json.dumps(result.diff))


@app.command()
def build(version: Annotated[int, typer.Argument(help="The version to replay into.")]) -> None:
    """Replay the log from offset 0 into an existing version up to the log end; no switch.

    The replay step (``designs.kappa.reprocess.replay_version``) the ``kappa_reprocess``
    DAG runs detached while its sensor waits; the DAG's next tasks check, validate and
    switch with the steps ``lk kappa reprocess`` runs.
    """
    from designs.kappa.reprocess import replay_version
    from designs.kappa.versions import existing_versions, open_version
    from event_log.topics import end_offsets
    from lake.spark import build_session
    from lake.tables import Tables

    config = settings()
    registry = platform(config).registry
    spark = build_session(config, app_name="lk-kappa-build")
    if version not in existing_versions(spark, Tables.of(config)):
        err_console.print(f"[red]error:[/red] v{version} does not exist")
        raise typer.Exit(1)
    lane = open_version(spark, config, version)
    target = end_offsets(config, config.kafka.events_topic)
    run = replay_version(spark, config, lane, registry, target)
    console.print(f"v{version}: {run.input_rows:,} rows in {run.seconds:.1f} s")


@app.command()
def rollback() -> None:
    """Point readers back to the previous version."""
    from designs.kappa.reprocess import rollback
    from lake.spark import build_session

    config = settings()
    with detached.claim(config, detached.KAPPA_WRITER):  # refuses during a reprocess
        spark = build_session(config, app_name="lk-kappa")
        version = rollback(spark, config, platform(config).registry)
    console.print(f"v{version} serves now")


@app.command()
def drop(version: Annotated[str, typer.Argument(help="The version to delete, e.g. v1.")]) -> None:
    """Delete a version that no longer serves."""
    from designs.kappa.reprocess import drop
    from lake.spark import build_session

    try:
        number = int(version.lstrip("v"))
    except ValueError:
        raise typer.BadParameter(f"expected vN or N, got {version!r}") from None
    config = settings()
    with detached.claim(config, detached.KAPPA_WRITER):
        drop(build_session(config, app_name="lk-kappa"), config, number)
    console.print(f"{version} dropped")
