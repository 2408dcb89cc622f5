"""One writer per table: a second writer of the same tables refuses before touching them."""

from __future__ import annotations

import os

import pytest

from config.settings import load_settings
from lk import detached
from tests.support.env import run_lk

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("holder", "args"),
    [
        (detached.KAPPA_WRITER, ["kappa", "rollback"]),
        (detached.KAPPA_WRITER, ["kappa", "drop", "v1"]),
        (detached.BATCH_WRITER, ["batch"]),
    ],
)
def test_a_second_writer_refuses_while_the_first_runs(holder, args, tmp_path):
    env = {
        "LK_STORAGE__ROOT": str(tmp_path / "data"),
        "LK_WATCHDOG__HOME": str(tmp_path / "run"),
        "LK_MODE": "kappa" if args[0] == "kappa" else "lambda",
    }
    settings = load_settings(
        storage={"root": env["LK_STORAGE__ROOT"]},
        watchdog={"home": env["LK_WATCHDOG__HOME"]},
        mode=env["LK_MODE"],
    )
    with detached.claim(settings, holder):  # this test process is the writer at work
        done = run_lk(*args, env=env, cwd=tmp_path, timeout=120)
    assert done.returncode != 0
    assert f"{holder} runs already (pid {os.getpid()})" in done.stdout + done.stderr
