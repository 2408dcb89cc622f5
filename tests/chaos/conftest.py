"""The chaos pass's bench: the session's SparkSession, a broker of its own (scenarios kill it)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from chaos.bench import Bench

#: Events per workload in CI: one fault per scenario on a tiny workload.
CI_EVENTS = 1_000
SEED = 17


@pytest.fixture(scope="package")
def bench(spark, base_settings, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Bench]:
    from infra.local import local_broker

    folder = tmp_path_factory.mktemp("chaos")
    with local_broker(base_settings, folder / "kafka") as settings:
        yield Bench(spark, settings, folder, CI_EVENTS)


def assert_clean(outcome) -> None:
    notes = "\n".join(outcome.notes)
    assert outcome.error is None, outcome.error
    assert outcome.faults >= 1, f"no fault was injected:\n{notes}"
    assert outcome.events_checked > 0 or outcome.scenario == "api_bad_queries", notes
    assert (outcome.lost, outcome.duplicated, outcome.unexplained) == (0, 0, 0), notes
