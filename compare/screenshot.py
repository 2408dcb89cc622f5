"""The report opened in headless Chromium: a PNG, and proof that its plots rendered.

Chromium runs with the DevTools protocol on loopback (as ``bin/airflow-screenshot``
does); after the page loads, the script counts plotly's rendered SVG plots, then
captures the whole page. Run: ``python -m compare.screenshot REPORT.html OUT.png``.
"""

from __future__ import annotations

import base64
import itertools
import json
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from infra.processes import stop_child

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    "--remote-debugging-address=127.0.0.1",
    "--remote-debugging-port=0",
]
#: Plots whose SVG carries drawn marks (points or bars), not just empty axes.
#: ``plots`` counts the containers in the page's HTML (there before plotly draws anything).
COUNT_PLOTS = """(() => {
  const plots = [...document.querySelectorAll('.plotly-graph-div')];
  const drawn = plots.filter(p => p.querySelectorAll('.point, .bars path').length > 0);
  return JSON.stringify({plots: plots.length, drawn: drawn.length,
                         ready: document.readyState, height: document.body.scrollHeight});
})()"""


def browser() -> str | None:
    """Chromium's executable (``infra/install-system-deps.sh`` installs it)."""
    return shutil.which("chromium") or shutil.which("chromium-browser")


def _port(profile: Path, proc: subprocess.Popen[bytes], timeout_s: float = 30.0) -> int:
    deadline = time.monotonic() + timeout_s
    marker = profile / "DevToolsActivePort"
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"chromium exited with code {proc.returncode}")
        if marker.exists() and marker.read_text().strip():
            return int(marker.read_text().split()[0])
        time.sleep(0.2)
    raise RuntimeError("chromium did not open its DevTools port")


def screenshot(report: Path, out: Path, width: int = 1200) -> dict[str, Any]:
    """Open ``report`` offline, save a full-page PNG to ``out``; the plots it counted."""
    from websockets.sync.client import connect

    exe = browser()
    if exe is None:
        raise RuntimeError("chromium is missing: run infra/install-system-deps.sh")
    with tempfile.TemporaryDirectory(prefix="lk-chromium-") as profile:
        proc = subprocess.Popen(
            [exe, *FLAGS, f"--user-data-dir={profile}", "about:blank"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            port = _port(Path(profile), proc)
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list") as response:
                tabs = [t for t in json.loads(response.read()) if t["type"] == "page"]
            with connect(tabs[0]["webSocketDebuggerUrl"], max_size=256 * 2**20) as ws:
                ids = itertools.count(1)

                def call(method: str, **params: object) -> dict[str, Any]:
                    ident = next(ids)
                    ws.send(json.dumps({"id": ident, "method": method, "params": params}))
                    while True:
                        message = json.loads(ws.recv())
                        if message.get("id") == ident:
                            if "error" in message:
                                raise RuntimeError(f"{method}: {message['error']}")
                            return message.get("result", {})

                call("Emulation.setDeviceMetricsOverride", width=width, height=900,
                     deviceScaleFactor=1, mobile=False)  # fmt: skip
                call("Page.enable")
                call("Page.navigate", url=report.resolve().as_uri())
                found: dict[str, Any] = {}
                deadline = time.monotonic() + 30
                while time.monotonic() < deadline:
                    value = call("Runtime.evaluate", expression=COUNT_PLOTS, returnByValue=True)
                    found = json.loads(value["result"].get("value") or "{}")
                    done = found.get("ready") == "complete" and found.get("plots")
                    if done and found.get("drawn") == found.get("plots"):
                        break
                    time.sleep(0.5)
                height = int(found.get("height") or 900)
                call("Emulation.setDeviceMetricsOverride", width=width, height=height,
                     deviceScaleFactor=1, mobile=False)  # fmt: skip
                time.sleep(1)
                shot = call("Page.captureScreenshot", format="png", captureBeyondViewport=True)
        finally:
            stop_child(proc, timeout_s=10)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(base64.b64decode(shot["data"]))
    return {"png": str(out), "bytes": out.stat().st_size, **found}


def main(argv: list[str]) -> int:
    """``python -m compare.screenshot REPORT.html OUT.png``."""
    found = screenshot(Path(argv[0]), Path(argv[1]))
    print(json.dumps(found))
    return 0 if found.get("plots") and found.get("drawn") == found.get("plots") else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
