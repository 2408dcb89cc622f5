"""Stopping a child and everything it forked into its process group."""

from __future__ import annotations

import subprocess
import sys
import time

from infra.processes import group_alive, stop_group

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
