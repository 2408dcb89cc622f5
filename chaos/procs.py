"""``lk`` commands as real processes, killed the way a crash kills them: SIGKILL, whole group."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import yaml

from config.errors import LkError
from config.settings import Settings
from infra import processes

REPO = Path(__file__).resolve().parents[1]


class ChaosError(LkError, RuntimeError):
    """A scenario could not inject its fault or the platform did not recover; says which."""


def config_file(settings: Settings, folder: Path) -> Path:
    """``settings`` as a YAML file a child ``lk`` reads (``LK_CONFIG``): the same platform."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"lk-{os.getpid()}-{time.monotonic_ns()}.yaml"
    path.write_text(yaml.safe_dump(settings.model_dump(mode="json"), sort_keys=False))
    return path


class LkProcess:
    """One ``lk <args>`` child in a process group of its own (its Spark JVM included)."""

    def __init__(self, settings: Settings, args: list[str], folder: Path) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("LK_")}
        env["LK_CONFIG"] = str(config_file(settings, folder))
        self.args = args
        self.output = folder / f"{'-'.join(args[:2])}-{time.monotonic_ns()}.out"
        with self.output.open("wb") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "lk.cli.app", *args],
                cwd=REPO,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    @property
    def pid(self) -> int:
        """The child's PID (also its process group id)."""
        return self.proc.pid

    def alive(self) -> bool:
        """Whether the child still runs."""
        return self.proc.poll() is None

    def kill(self) -> None:
        """SIGKILL the whole group: no handler runs, nothing is flushed, as in a crash."""
        processes.kill_group(self.proc.pid)  # the JVM is in the group too
        self.proc.wait()

    def wait(self, timeout_s: float) -> int:
        """Wait for the child to end; a child still running after ``timeout_s`` is an error."""
        try:
            return self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.kill()
            raise ChaosError(
                f"`lk {' '.join(self.args)}` still ran after {timeout_s:.0f} s:\n{self.tail()}"
            ) from None

    def tail(self, lines: int = 30) -> str:
        """The lines the child printed that name an error, then its last lines."""
        return processes.failure_excerpt(self.output, lines) or "(no output)"


#: How long a scenario waits for the moment it aims at. Generous: a child that dies ends
#: the wait at once, and on a loaded two-core machine a JVM's start alone can take minutes.
WAIT_S = 900.0


def wait_for(
    ready: Callable[[], bool],
    what: str,
    timeout_s: float = WAIT_S,
    child: LkProcess | None = None,
    poll_s: float = 0.05,
) -> None:
    """Poll until ``ready()``; a child that ends first, or a timeout, is a ``ChaosError``."""
    deadline = time.monotonic() + timeout_s
    while not ready():
        if child is not None and not child.alive():
            raise ChaosError(f"`lk {' '.join(child.args)}` ended before {what}:\n{child.tail()}")
        if time.monotonic() > deadline:
            tail = f":\n{child.tail()}" if child is not None else ""
            raise ChaosError(f"waited {timeout_s:.0f} s for {what} in vain{tail}")
        time.sleep(poll_s)
