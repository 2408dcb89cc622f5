"""Broker faults: a restart under lk produce, a node of three killed at full rate.

The scenarios that run Spark processes for minutes (2-5 each) are marked ``scenario``:
``make scenarios`` and ``lk chaos`` run them, CI does not (the SIGKILLs they cover are also
tested in tests/speed_layer/test_crash_recovery.py, tests/batch_layer/test_batch_job.py
and tests/designs/kappa/test_reprocess_routes.py)."""

from __future__ import annotations

import re

import pytest

from chaos.scenarios import broker, cluster
from tests.chaos.conftest import SEED, assert_clean

pytestmark = pytest.mark.chaos


# make scenarios, not CI: its twin in CI kills one node of three under produce
@pytest.mark.scenario
def test_broker_restart_under_produce_loses_and_doubles_nothing(bench) -> None:
    outcome = broker.run_produce(bench, SEED)
    assert_clean(outcome)
    assert outcome.events_checked >= 10 * bench.events  # every record counted back


def test_one_node_of_three_killed_under_produce_loses_no_acknowledged_record(bench) -> None:
    outcome = cluster.run(bench, SEED)
    assert_clean(outcome)
    assert outcome.notes[0] == "RF 3, min.insync.replicas 2"


@pytest.mark.scenario
def test_broker_restart_under_the_speed_layer_needs_no_operator(bench) -> None:
    outcome = broker.run_speed(bench, SEED)
    assert_clean(outcome)
    said = re.search(
        r"restarted its lane (\d+) times.*lk status says (\d+)", "\n".join(outcome.notes)
    )
    assert said is not None, outcome.notes
    assert int(said[1]) >= 1, outcome.notes  # the outage was felt, and outlived
    assert int(said[2]) == int(said[1]), outcome.notes  # and an operator can see it
