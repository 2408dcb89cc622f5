"""A Kappa reprocess SIGKILLed before or after its switch; readers see old or new, never a mix.

Version 2 freezes other view settings (a 2-minute tumbling window) than version 1, so
the served rows tell which version a reader got: after the kill, whichever version the
pointer names must equal the oracle under *its* settings. The rerun must resume the
unfinished version (no version 3, nothing left on disk) and switch to it.
"""

from __future__ import annotations

import time
from datetime import timedelta

from chaos.bench import Bench, lane_dir, rng_for
from chaos.procs import WAIT_S, LkProcess, wait_for
from chaos.results import Outcome
from chaos.verify import ViewCheck, check_served
from config.settings import Settings, with_sections
from designs.kappa import reprocess as kappa
from designs.kappa.versions import (
    existing_versions,
    lane_name,
    open_version,
    serving_version,
    version_settings,
)
from designs.platform import build
from lake.tables import Tables

NAME = "kappa_sigkill"
MOMENTS = ("mid-replay", "after-switch")


def _served_as_its_version(bench: Bench, settings: Settings) -> tuple[int | None, ViewCheck]:
    version = serving_version(bench.spark, Tables.of(settings))
    assert version is not None
    frozen = version_settings(settings, open_version(bench.spark, settings, version))
    return version, check_served(bench.spark, frozen, lane_name(version))


def run(bench: Bench, seed: int) -> Outcome:
    """v1 serves; ``lk kappa reprocess`` into v2 is killed; check; rerun; check."""
    rng = rng_for(seed, NAME)
    started = time.perf_counter()
    outcome = Outcome(NAME, seed)
    lateness = {"revenue_by_category": timedelta(hours=1)}
    settings = bench.fresh("kappa", views={"allowed_lateness": lateness})
    tables = Tables.of(settings)
    bench.produce(settings, bench.workload(seed))
    kappa.reprocess(bench.spark, settings, build(settings).registry)  # v1
    changed = with_sections(settings, views={"tumbling_window": timedelta(minutes=2)})
    moment = rng.choice(MOMENTS)
    pointer = lane_dir(settings, "kappa", "pointer", "_delta_log")
    switches = len(list(pointer.glob("*.json")))
    commits = lane_dir(settings, "kappa", "v2", "checkpoint", "commits")
    child = LkProcess(changed, ["kappa", "reprocess"], bench.folder)
    try:
        if moment == "mid-replay":
            wait_for(
                lambda: commits.exists() and any(commits.iterdir()),
                "a v2 micro-batch",
                WAIT_S,
                child,
            )
            time.sleep(rng.uniform(0.0, 2.0))
        else:
            wait_for(
                lambda: len(list(pointer.glob("*.json"))) > switches, "the switch", WAIT_S, child
            )
    finally:
        child.kill()
    outcome.faults = 1
    version, seen = _served_as_its_version(bench, changed)
    outcome.notes.append(f"killed {moment}; v{version} serves: {seen.describe()}")
    rerun = kappa.reprocess(bench.spark, changed, build(changed).registry) if version == 1 else None
    if rerun is not None:
        outcome.notes.append(
            f"rerun: v{rerun.version} resumed={rerun.resumed} abandoned={list(rerun.abandoned)}"
        )
        if rerun.version != 2 or not rerun.resumed:
            outcome.unexplained += 1  # a new version from offset 0 instead of resuming v2
    versions = existing_versions(bench.spark, tables)
    if versions != [1, 2]:
        outcome.unexplained += 1
        outcome.notes.append(f"versions on storage: {versions}")
    final_version, final = _served_as_its_version(bench, changed)
    outcome.notes.append(f"v{final_version} serves: {final.describe()}")
    if final_version != 2:
        outcome.unexplained += 1
    outcome.events_checked = seen.events_checked + final.events_checked
    outcome.lost = seen.lost + final.lost
    outcome.duplicated = seen.duplicated + final.duplicated
    outcome.unexplained += seen.unexplained + final.unexplained
    outcome.seconds = time.perf_counter() - started
    return outcome
