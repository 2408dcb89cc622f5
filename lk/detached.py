"""Long-running ``lk`` processes started in the background, tracked by PID files.

The speed layer (``lk speed``) and a Kappa replay (``lk kappa build``) outlive the Airflow
task that starts them, so each is its own session (not in Airflow's process groups:
``lk airflow down`` leaves them running) with a PID file and an output file under
``settings.watchdog.home``, named per storage root and mode. ``lk speed`` claims its PID
file itself, so one started by hand counts too and a second one refuses to start on the
same lane.
"""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from config.errors import LkError
from config.settings import Settings
from infra import processes

SPEED_PROCESS = "speed"  # the long-running ``lk speed``
SERVE_PROCESS = "serve"  # ``lk serve``: ``lk query`` asks it instead of starting Spark
BATCH_WRITER = "batch"  # ``lk batch``: the one writer of bronze, the batch views and the runs
KAPPA_WRITER = "kappa"  # ``lk kappa reprocess|rollback|drop``: the one writer of the pointer


class AlreadyRunningError(LkError, RuntimeError):
    """A process of that name runs already (its PID is in the message)."""


def _file(settings: Settings, name: str, suffix: str) -> Path:
    """``<watchdog.home>/<name>-<storage digest>.<suffix>``.

    Lanes live under the storage root, so "one ``lk speed`` per lane" means one per
    storage root (and mode): two platforms on one machine (a demo and a test run) each
    get their own PID file instead of refusing each other.
    """
    key = f"{settings.storage.uri()}|{settings.mode}".encode()
    digest = hashlib.sha256(key).hexdigest()[:10]
    return settings.watchdog.home.resolve() / f"{name}-{digest}.{suffix}"


def pid_file(settings: Settings, name: str) -> Path:
    """Where the PID of process ``name`` is kept for these settings."""
    return _file(settings, name, "pid")


def running(settings: Settings, name: str) -> int | None:
    """The PID of the live process ``name``, or None (a stale PID file is removed)."""
    return processes.read_pid(_file(settings, name, "pid"))


def _write_pid(settings: Settings, name: str, pid: int) -> None:
    processes.write_pid(_file(settings, name, "pid"), pid)


@contextmanager
def claim(settings: Settings, name: str) -> Iterator[None]:
    """Hold ``name``'s PID file for this process (a live other holder is an error)."""
    holder = running(settings, name)
    if holder is not None and holder != os.getpid():
        raise AlreadyRunningError(f"{name} runs already (pid {holder})")
    _write_pid(settings, name, os.getpid())
    try:
        yield
    finally:
        if running(settings, name) == os.getpid():
            _file(settings, name, "pid").unlink(missing_ok=True)


def start(settings: Settings, name: str, lk_args: list[str]) -> int:
    """Start ``lk <lk_args>`` in its own session; output goes to ``<name>.out``.

    The environment (``LK_*`` included) and working directory are this process's, so
    the child reads the same settings.

    Raises:
        AlreadyRunningError: ``name`` runs already.
    """
    if (pid := running(settings, name)) is not None:
        raise AlreadyRunningError(f"{name} runs already (pid {pid})")
    out = _file(settings, name, "out")
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("ab") as stream:
        proc = subprocess.Popen(
            [sys.executable, "-m", "lk.cli.app", *lk_args],
            stdin=subprocess.DEVNULL,
            stdout=stream,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            cwd=Path.cwd(),
        )
    _write_pid(settings, name, proc.pid)
    return proc.pid


def _signal(pid: int, sig: signal.Signals) -> None:
    """Signal the process's group if it leads one (ours do), else the process alone."""
    with suppress(ProcessLookupError):
        if os.getpgid(pid) == pid:
            os.killpg(pid, sig)
        else:
            os.kill(pid, sig)


def stop(settings: Settings, name: str, timeout_s: float = 60.0) -> bool:
    """SIGTERM the process group of ``name``, SIGKILL after ``timeout_s``; True if it ran."""
    pid = running(settings, name)
    if pid is None:
        return False
    _signal(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    while processes.alive(pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    if processes.alive(pid):
        _signal(pid, signal.SIGKILL)
        while processes.alive(pid):
            time.sleep(0.1)
    _file(settings, name, "pid").unlink(missing_ok=True)
    return True


def output_tail(settings: Settings, name: str, lines: int = 20) -> str:
    """The last lines ``name`` printed (for failure messages)."""
    return processes.failure_excerpt(_file(settings, name, "out"), lines) or "(no output)"
