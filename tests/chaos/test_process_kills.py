"""SIGKILLed lk processes: the speed layer, a batch run, a Kappa reprocess.

The scenarios that run Spark processes for minutes (2-5 each) are marked ``scenario``:
``make scenarios`` and ``lk chaos`` run them, CI does not (the SIGKILLs they cover are also
tested in tests/speed_layer/test_crash_recovery.py, tests/batch_layer/test_batch_job.py
and tests/designs/kappa/test_reprocess_routes.py)."""

from __future__ import annotations

import pytest

from chaos.scenarios import batch, kappa, speed
from tests.chaos.conftest import SEED, assert_clean

pytestmark = pytest.mark.chaos


@pytest.mark.scenario
def test_speed_layer_killed_then_restarted_serves_the_oracle(bench) -> None:
    assert_clean(speed.run(bench, SEED, kills=1))


@pytest.mark.scenario
def test_batch_killed_keeps_the_previous_run_serving_and_the_next_converges(bench) -> None:
    assert_clean(batch.run(bench, SEED))


@pytest.mark.scenario
def test_kappa_reprocess_killed_serves_old_or_new_and_the_rerun_resumes(bench) -> None:
    assert_clean(kappa.run(bench, SEED))
