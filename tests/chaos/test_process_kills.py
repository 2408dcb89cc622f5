"""SIGKILLed lk processes: the speed layer, a batch run, a Kappa reprocess."""

from __future__ import annotations

import pytest

from chaos.scenarios import batch, kappa, speed
from tests.chaos.conftest import SEED, assert_clean

pytestmark = pytest.mark.chaos


def test_speed_layer_killed_then_restarted_serves_the_oracle(bench) -> None:
    assert_clean(speed.run(bench, SEED, kills=1))


def test_batch_killed_keeps_the_previous_run_serving_and_the_next_converges(bench) -> None:
    assert_clean(batch.run(bench, SEED))


def test_kappa_reprocess_killed_serves_old_or_new_and_the_rerun_resumes(bench) -> None:
    assert_clean(kappa.run(bench, SEED))
