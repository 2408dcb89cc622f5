"""Run the scenarios ``runs`` times from one seed and collect their outcomes."""

from __future__ import annotations

import logging
import time
import traceback
from collections.abc import Callable, Container, Iterator
from contextlib import contextmanager
from pathlib import Path

from chaos.bench import Bench
from chaos.results import Outcome
from config.settings import Settings, with_sections
from infra.local import local_broker

log = logging.getLogger(__name__)

Scenario = Callable[[Bench, int], Outcome]


def scenarios() -> dict[str, Scenario]:
    """Every scenario by name, in the order a pass runs them."""
    from chaos.scenarios import api, batch, broker, cluster, kappa, retention, speed

    return {
        broker.PRODUCE: broker.run_produce,
        cluster.NAME: cluster.run,
        retention.NAME: retention.run,
        speed.NAME: lambda bench, seed: speed.run(bench, seed, kills=3),
        broker.SPEED: broker.run_speed,
        batch.NAME: batch.run,
        kappa.NAME: kappa.run,
        api.NAME: api.run,
    }


@contextmanager
def open_bench(settings: Settings, folder: Path, events: int = 2_000) -> Iterator[Bench]:
    """A broker of the harness's own under ``folder`` and one SparkSession; both stopped after."""
    from lake.spark import build_session

    folder = folder.resolve()
    rooted = with_sections(settings, storage={"root": str(folder / "data")})
    with local_broker(rooted, folder / "kafka") as mine:
        spark = build_session(mine, app_name="lk-chaos")
        try:
            yield Bench(spark, mine, folder, events)
        finally:
            spark.stop()


def run_all(
    bench: Bench,
    seed: int,
    runs: int,
    names: list[str] | None = None,
    on_outcome: Callable[[Outcome], None] | None = None,
    done: Container[tuple[str, int]] = (),
) -> list[Outcome]:
    """Every scenario ``runs`` times; run ``i`` uses seed ``seed + i``.

    A scenario that raises is recorded with its error (and counts as not clean); the
    pass goes on with the next one. ``done`` holds (scenario, seed) pairs an earlier,
    cut-off pass already ran: they are skipped, so a resumed pass draws the same moments.
    """
    chosen = scenarios()
    if names:
        chosen = {n: chosen[n] for n in names}
    outcomes = []
    for i in range(runs):
        for name, scenario in chosen.items():
            if (name, seed + i) in done:
                continue
            started = time.perf_counter()
            try:
                outcome = scenario(bench, seed + i)
            except Exception as error:
                log.exception("scenario %s (seed %d) failed", name, seed + i)
                outcome = Outcome(
                    name,
                    seed + i,
                    error=f"{error!r}\n{traceback.format_exc()}",
                    seconds=time.perf_counter() - started,
                )
            outcomes.append(outcome)
            if on_outcome:
                on_outcome(outcome)
    return outcomes
