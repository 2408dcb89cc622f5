"""The test process ends with pytest's exit status once it has reported (``tests/conftest.py``),
even when something left behind would hold Python's own shutdown forever."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.unit

LEFT_BEHIND = """
import threading

import pytest

pytestmark = pytest.mark.unit


def test_leaves_a_thread_that_never_ends():
    threading.Thread(target=threading.Event().wait, name="never-ends").start()
    assert {outcome}
"""


def _session(tmp_path: Path, outcome: str) -> subprocess.CompletedProcess[str]:
    test = tmp_path / "test_left_behind.py"
    test.write_text(LEFT_BEHIND.format(outcome=outcome))
    plugins = ["-p", "tests.conftest", "-p", "no:cacheprovider"]
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", *plugins, "--rootdir", str(tmp_path), str(test)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,  # without the hook the process would wait for the thread forever
        check=False,
    )


@pytest.mark.parametrize(
    ("outcome", "status", "summary"), [("True", 0, "1 passed"), ("False", 1, "1 failed")]
)
def test_the_process_exits_with_pytests_status_past_a_thread_that_never_ends(
    tmp_path, outcome, status, summary
):
    done = _session(tmp_path, outcome)
    assert done.returncode == status, done.stdout + done.stderr
    assert summary in done.stdout
    assert "threads still running at exit: ['never-ends']" in done.stderr
