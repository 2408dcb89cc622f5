"""Headless Chromium over the DevTools protocol, for the report check and the Airflow screenshot.

Chromium runs with its DevTools endpoint on loopback and a throw-away profile. It starts
helper processes (zygote, renderers, crash handler) that keep writing into that profile
for a moment after the browser is told to quit, so the whole process group is stopped
and waited for before the profile is removed.
"""

from __future__ import annotations

import itertools
import json
import shutil
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from config.errors import LkError
from infra.processes import stop_group

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    "--remote-debugging-address=127.0.0.1",
    "--remote-debugging-port=0",
]


class ChromiumError(LkError, RuntimeError):
    """Chromium is missing, did not start, or refused a DevTools command."""


def executable() -> str | None:
    """Chromium's executable (``infra/install-system-deps.sh chromium`` installs it)."""
    return shutil.which("chromium") or shutil.which("chromium-browser")


class Page:
    """Just enough of the DevTools protocol: send a command, wait for its answer."""

    def __init__(self, ws: Any) -> None:
        self._ws = ws
        self._ids = itertools.count(1)

    def call(self, method: str, **params: object) -> dict[str, Any]:
        """Send one command; events that arrive meanwhile are skipped."""
        ident = next(self._ids)
        self._ws.send(json.dumps({"id": ident, "method": method, "params": params}))
        while True:
            message = json.loads(self._ws.recv())
            if message.get("id") == ident:
                if "error" in message:
                    raise ChromiumError(f"{method}: {message['error']}")
                return message.get("result", {})


@contextmanager
def page(extra_flags: Sequence[str] = ()) -> Iterator[Page]:
    """A blank tab of a fresh headless Chromium; the browser and its profile go on exit."""
    from websockets.sync.client import connect

    exe = executable()
    if exe is None:
        raise ChromiumError("chromium is missing: run infra/install-system-deps.sh chromium")
    with tempfile.TemporaryDirectory(prefix="lk-chromium-") as profile:
        proc = subprocess.Popen(
            [exe, *FLAGS, *extra_flags, f"--user-data-dir={profile}", "about:blank"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            port = _devtools_port(Path(profile), proc)
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list") as response:
                tabs = [t for t in json.loads(response.read()) if t["type"] == "page"]
            with connect(tabs[0]["webSocketDebuggerUrl"], max_size=256 * 2**20) as ws:
                yield Page(ws)
        finally:
            stop_group(proc, timeout_s=10)


def _devtools_port(profile: Path, proc: subprocess.Popen[bytes], timeout_s: float = 30.0) -> int:
    """Chromium writes the port it picked into ``DevToolsActivePort`` in the profile."""
    deadline = time.monotonic() + timeout_s
    marker = profile / "DevToolsActivePort"
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise ChromiumError(f"chromium exited with code {proc.returncode}")
        if marker.exists() and marker.read_text().strip():
            return int(marker.read_text().split()[0])
        time.sleep(0.2)
    raise ChromiumError("chromium did not open its DevTools port")
