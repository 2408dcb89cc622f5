"""The batch layer SIGKILLed while landing, computing, validating or publishing.

The previous run must keep serving, exactly as the oracle says for its cutoff, and the
next ``lk batch`` must converge: a new run over the whole log, equal to the oracle.
Where the kill landed is read back from the tables the run writes.
"""

from __future__ import annotations

import time
from typing import NamedTuple

from batch_layer import runs
from batch_layer.job import run_batch
from chaos.bench import Bench, lane_dir, rng_for
from chaos.procs import WAIT_S, LkProcess, wait_for
from chaos.results import Outcome
from chaos.verify import check_served
from config.settings import Settings
from designs.platform import build
from lake import storage
from lake.tables import Tables

NAME = "batch_sigkill"
PHASES = ("landing", "computing", "validating", "publishing")


class _Before(NamedTuple):
    """What storage held before the kill: the published run, the versions, the run folders."""

    run: str
    runs_log: int | None
    bronze: int | None
    folders: set[str]


def _runs_seen(bench: Bench, settings: Settings) -> set[str]:
    folder = lane_dir(settings, "lambda", "batch")
    return {p.name for p in folder.iterdir()} if folder.exists() else set()


def _phase(bench: Bench, settings: Settings, before: _Before) -> str:
    """Where the run was when it died, from what it left on storage."""
    tables = Tables.of(settings)
    published = runs.latest_published(bench.spark, tables)
    if published and published.run_id != before.run:
        return "after publishing"
    if storage.delta_version(bench.spark, tables.batch_runs) != before.runs_log:
        return "validating or publishing"
    if _runs_seen(bench, settings) - before.folders:
        return "computing"
    if storage.delta_version(bench.spark, tables.bronze) != before.bronze:
        return "landing"
    return "starting"


def run(bench: Bench, seed: int) -> Outcome:
    """Publish a run, add events, kill the next ``lk batch`` mid-way, check, rerun, check."""
    rng = rng_for(seed, NAME)
    started = time.perf_counter()
    outcome = Outcome(NAME, seed)
    settings = bench.fresh("lambda")
    tables = Tables.of(settings)
    records = bench.workload(seed)
    split = len(records) // 2
    bench.produce(settings, records[:split])
    first = run_batch(bench.spark, settings, build(settings).registry).run
    bench.produce(settings, records[split:])
    before = _Before(
        run=first.run_id,
        runs_log=storage.delta_version(bench.spark, tables.batch_runs),
        bronze=storage.delta_version(bench.spark, tables.bronze),
        folders=_runs_seen(bench, settings),
    )
    target = rng.choice(PHASES)
    batch = LkProcess(settings, ["batch"], bench.folder)
    try:
        if target == "landing":
            wait_for(
                lambda: storage.delta_version(None, tables.bronze) != before.bronze,
                "a bronze commit",
                WAIT_S,
                batch,
            )
        elif target == "computing":
            wait_for(
                lambda: bool(_runs_seen(bench, settings) - before.folders),
                "a run folder",
                WAIT_S,
                batch,
            )
            time.sleep(rng.uniform(0.0, 2.0))
        else:
            wait_for(
                lambda: storage.delta_version(None, tables.batch_runs) != before.runs_log,
                "a computed run",
                WAIT_S,
                batch,
            )
            time.sleep(rng.uniform(0.0, 2.0) if target == "validating" else rng.uniform(2.0, 6.0))
    finally:
        batch.kill()
    outcome.faults = 1
    landed = _phase(bench, settings, before)
    outcome.notes.append(f"aimed at {target}, killed {landed}")
    serving = runs.latest_published(bench.spark, tables)
    assert serving is not None
    if landed != "after publishing" and serving.run_id != first.run_id:
        outcome.unexplained += 1
        outcome.notes.append(f"run {serving.run_id} serves, not the previous {first.run_id}")
    old = check_served(
        bench.spark, settings, None, cutoff=serving.cutoff, catalog_cutoff=serving.catalog_cutoff
    )
    outcome.notes.append(f"after the kill ({serving.run_id}): {old.describe()}")
    rerun = run_batch(bench.spark, settings, build(settings).registry).run  # the next `lk batch`
    new = check_served(
        bench.spark, settings, None, cutoff=rerun.cutoff, catalog_cutoff=rerun.catalog_cutoff
    )
    outcome.notes.append(f"next run {rerun.run_id}: {new.describe()}")
    outcome.events_checked = old.events_checked + new.events_checked
    outcome.lost = old.lost + new.lost
    outcome.duplicated = old.duplicated + new.duplicated
    outcome.unexplained += old.unexplained + new.unexplained
    outcome.seconds = time.perf_counter() - started
    return outcome
