"""Background processes tracked by PID files: the broker, Airflow and detached ``lk`` jobs.

A PID file holds ``<pid> <start time>``: the start time (clock ticks since boot, from
``/proc``) tells our process from a stranger that reused its PID, which matters for
processes that retitle themselves (Airflow) and outlive the shell that started them.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from contextlib import suppress
from pathlib import Path


def start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (``/proc/<pid>/stat`` field 22)."""
    try:
        return (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def alive(pid: int) -> bool:
    """True if ``pid`` is a live, non-zombie process (our own exited children are reaped)."""
    with suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    stat = Path("/proc") / str(pid) / "stat"
    try:
        return stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return not stat.parent.exists()


def write_pid(file: Path, pid: int) -> None:
    """Record ``pid`` (and its start time) in ``file``."""
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(f"{pid} {start_time(pid) or ''}\n")


def read_pid(file: Path) -> int | None:
    """The live process ``file`` names, or None; a stale file is removed."""
    if not file.exists():
        return None
    pid_text, _, started = file.read_text().strip().partition(" ")
    pid = int(pid_text) if pid_text.isdigit() else None
    if pid is not None and alive(pid) and (not started or start_time(pid) in (None, started)):
        return pid
    file.unlink(missing_ok=True)
    return None


def tail(path: Path, lines: int = 25) -> str:
    """The last ``lines`` lines of a process's output file ("" if there is none)."""
    if not path.exists():
        return ""
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


#: A line that names an error: ``SomeError: why`` or Spark's ``terminated with exception``.
_ERROR_LINE = re.compile(r"\w(Error|Exception)\b[^ ]*:|terminated with exception")


def failure_excerpt(path: Path, lines: int = 25, errors: int = 5) -> str:
    """The first lines of a process's output that name an error, then its last lines.

    A failed Spark query prints its reason once, above a logical plan of a hundred lines:
    the tail alone shows the plan and hides why it failed.
    """
    if not path.exists():
        return ""
    named = dict.fromkeys(
        line.strip()
        for line in path.read_text(errors="replace").splitlines()
        if _ERROR_LINE.search(line)
    )
    last = tail(path, lines)
    if not named:
        return last
    return "\n".join([*list(named)[:errors], "...", last])


def stop_child(child: subprocess.Popen, timeout_s: float = 30.0) -> None:
    """Stop a child process we started: SIGTERM, then SIGKILL after ``timeout_s``."""
    if child.poll() is not None:
        return
    child.terminate()
    try:
        child.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait(timeout=timeout_s)


def stop_group(child: subprocess.Popen, timeout_s: float = 30.0) -> None:
    """Stop a child started with ``start_new_session=True`` and every process of its group.

    The child gets SIGTERM (SIGKILL after ``timeout_s``); whatever of its group is left
    (helpers it forked, a JVM) gets SIGKILL, and the call returns once none is left.
    """
    stop_child(child, timeout_s)
    kill_group(child.pid, timeout_s)


def kill_group(pgid: int, timeout_s: float = 30.0) -> None:
    """SIGKILL process group ``pgid`` and wait (up to ``timeout_s``) until none of it is left."""
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
    deadline = time.monotonic() + timeout_s
    while group_alive(pgid) and time.monotonic() < deadline:
        time.sleep(0.1)


def group_alive(pgid: int) -> bool:
    """True if a live (non-zombie) process of group ``pgid`` is left."""
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return any(
        alive(int(p.name))
        for p in Path("/proc").iterdir()
        if p.name.isdigit() and _pgid(int(p.name)) == pgid
    )


def _pgid(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except ProcessLookupError:
        return None
