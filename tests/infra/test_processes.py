"""Stopping a child and everything it forked into its process group; reading why it failed."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from infra.processes import failure_excerpt, group_alive, stop_group

pytestmark = pytest.mark.unit

#: A parent that forks a grandchild ignoring SIGTERM, then sleeps: SIGTERM alone leaves the
#: grandchild behind, as Chromium's helpers outlive the browser for a moment.
PARENT = """
import os, signal, sys, time
if os.fork() == 0:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    time.sleep(60)
    sys.exit(0)
print("forked", flush=True)
time.sleep(60)
"""


def test_stop_group_leaves_nothing_of_the_group() -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", PARENT], stdout=subprocess.PIPE, start_new_session=True
    )
    assert child.stdout is not None
    assert child.stdout.readline().strip() == b"forked"
    time.sleep(0.2)  # the grandchild has set its handler
    stop_group(child, timeout_s=5)
    assert child.returncode is not None
    assert not group_alive(child.pid)


def test_a_group_that_is_gone_is_not_alive() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"], start_new_session=True)
    child.wait()
    assert not group_alive(child.pid)
    stop_group(child, timeout_s=1)  # nothing to stop: returns at once


def test_a_failure_excerpt_leads_with_the_error_a_long_plan_would_hide(tmp_path) -> None:
    output = tmp_path / "speed.out"
    plan = [f"   +- Project [column#{n}]" for n in range(100)]
    output.write_text(
        "\n".join(
            [
                "batch 0: 500 rows",
                "RuntimeError: lane lambda-speed failed: [STREAM_FAILED] Query [id = 1] "
                "terminated with exception: Timeout of 60000ms expired",
                *plan,
            ]
        )
    )
    excerpt = failure_excerpt(output, lines=3).splitlines()
    assert excerpt[0].startswith("RuntimeError: lane lambda-speed failed")
    assert excerpt[-3:] == plan[-3:]
    assert len(excerpt) == 5


def test_a_failure_excerpt_of_a_clean_output_is_its_tail(tmp_path) -> None:
    output = tmp_path / "speed.out"
    output.write_text("batch 0: 500 rows\nbatch 1: 0 rows\n")
    assert failure_excerpt(output, lines=1) == "batch 1: 0 rows"
    assert failure_excerpt(tmp_path / "missing.out") == ""
