"""The speed layer SIGKILLed at random moments, restarted each time with no manual step.

Moments (drawn from the seed): inside the first micro-batch of a fresh lane, inside a
later micro-batch, between micro-batches, and while the lane rebases onto a batch run
published under it. The kill moment is timed from Spark's checkpoint alone (a planned
``offsets/N`` without ``commits/N`` is a micro-batch in flight), so the speed layer
stays a black box; where the kill actually landed is read back from the same files.
"""

from __future__ import annotations

import random
import time
from pathlib import Path

from batch_layer import runs
from batch_layer.job import run_batch
from chaos.bench import Bench, checkpoint_ids, in_slices, lane_dir, rng_for
from chaos.procs import WAIT_S, ChaosError, LkProcess, wait_for
from chaos.results import Outcome
from chaos.verify import check_served
from config.settings import Settings
from designs.lambda_arch import LAMBDA_LANE
from designs.platform import build
from lake.tables import Tables

NAME = "speed_sigkill"
MOMENTS = ("first-micro-batch", "inside", "between", "rebase")


def _planned_uncommitted(checkpoint: Path) -> set[int]:
    return checkpoint_ids(checkpoint, "offsets") - checkpoint_ids(checkpoint, "commits")


def _kill_at(
    moment: str,
    speed: LkProcess,
    bench: Bench,
    settings: Settings,
    rng: random.Random,
    checkpoint: Path,
) -> str:
    """Wait for ``moment``, SIGKILL the speed layer, and say where the kill landed."""
    if moment == "first-micro-batch":
        wait_for(
            lambda: 0 in _planned_uncommitted(checkpoint),
            "a first micro-batch",
            WAIT_S,
            speed,
        )
        time.sleep(rng.uniform(0.0, 1.5))
    elif moment == "inside":
        done = len(checkpoint_ids(checkpoint, "commits"))
        wait_for(
            lambda: len(checkpoint_ids(checkpoint, "commits")) > done,
            "a commit",
            WAIT_S,
            speed,
        )
        wait_for(
            lambda: bool(_planned_uncommitted(checkpoint)),
            "a micro-batch in flight",
            WAIT_S,
            speed,
        )
        time.sleep(rng.uniform(0.0, 1.0))
    elif moment == "between":
        done = len(checkpoint_ids(checkpoint, "commits"))
        wait_for(
            lambda: (
                len(checkpoint_ids(checkpoint, "commits")) > done
                and not _planned_uncommitted(checkpoint)
            ),
            "a committed micro-batch",
            WAIT_S,
            speed,
        )
    elif moment == "rebase":
        wait_for(lambda: bool(checkpoint_ids(checkpoint, "commits")), "a commit", WAIT_S, speed)
        run_batch(
            bench.spark, settings, build(settings).registry
        )  # published under the running lane
        time.sleep(rng.uniform(0.0, 3.0))  # the lane follows it at its next poll
    planned = _planned_uncommitted(checkpoint)
    speed.kill()
    if not checkpoint_ids(checkpoint, "commits"):
        return "first-micro-batch"
    landed = f"micro-batch {min(planned)} in flight" if planned else "between"
    return landed if landed == moment else f"aimed {moment}, landed {landed}"


def run(bench: Bench, seed: int, kills: int = 1) -> Outcome:
    """Produce in slices, kill ``lk speed`` ``kills`` times, catch up, compare with the oracle."""
    rng = rng_for(seed, NAME)
    started = time.perf_counter()
    outcome = Outcome(NAME, seed)
    settings = bench.fresh("lambda")
    records = bench.workload(seed)
    slices = in_slices(records, kills + 1)
    moments = [rng.choice(MOMENTS[1:]) for _ in range(kills)]
    if rng.random() < 0.5:
        moments[0] = "first-micro-batch"
    checkpoint = lane_dir(settings, "lambda", "speed", "checkpoint")
    bench.produce(settings, slices[0])
    for i, moment in enumerate(moments):
        speed = LkProcess(settings, ["speed"], bench.folder)
        try:
            landed = _kill_at(moment, speed, bench, settings, rng, checkpoint)
        finally:
            speed.kill()
        outcome.faults += 1
        outcome.notes.append(f"kill {i + 1}: {landed}")
        bench.produce(settings, slices[i + 1])
    # the restart an operator would not have to think about: the same command again
    build(settings).run_streaming(bench.spark, until_caught_up=True)
    run_ = runs.latest_published(bench.spark, Tables.of(settings))
    check = check_served(
        bench.spark,
        settings,
        LAMBDA_LANE,
        cutoff=run_.cutoff if run_ else None,
        catalog_cutoff=run_.catalog_cutoff if run_ else None,
    )
    outcome.events_checked = check.events_checked
    outcome.lost, outcome.duplicated = check.lost, check.duplicated
    outcome.unexplained = check.unexplained
    outcome.notes.append(check.describe())
    outcome.seconds = time.perf_counter() - started
    return outcome


__all__ = ["MOMENTS", "NAME", "ChaosError", "run"]
