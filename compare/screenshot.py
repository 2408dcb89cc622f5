"""The report opened in headless Chromium: a PNG, and proof that its plots rendered.

After the page loads, the script counts plotly's rendered SVG plots, then captures the
whole page. Run: ``python -m compare.screenshot REPORT.html OUT.png``.
"""

from __future__ import annotations

import base64
import json
import sys
import time
from pathlib import Path
from typing import Any

from infra import chromium

#: Plots whose SVG carries drawn marks (points or bars), not just empty axes.
#: ``plots`` counts the containers in the page's HTML (there before plotly draws anything).
COUNT_PLOTS = """(() => {
  const plots = [...document.querySelectorAll('.plotly-graph-div')];
  const drawn = plots.filter(p => p.querySelectorAll('.point, .bars path').length > 0);
  return JSON.stringify({plots: plots.length, drawn: drawn.length,
                         ready: document.readyState, height: document.body.scrollHeight});
})()"""


def screenshot(report: Path, out: Path, width: int = 1200) -> dict[str, Any]:
    """Open ``report`` offline, save a full-page PNG to ``out``; the plots it counted."""
    with chromium.page() as page:
        page.call("Emulation.setDeviceMetricsOverride", width=width, height=900,
                  deviceScaleFactor=1, mobile=False)  # fmt: skip
        page.call("Page.enable")
        page.call("Page.navigate", url=report.resolve().as_uri())
        found: dict[str, Any] = {}
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            value = page.call("Runtime.evaluate", expression=COUNT_PLOTS, returnByValue=True)
            found = json.loads(value["result"].get("value") or "{}")
            done = found.get("ready") == "complete" and found.get("plots")
            if done and found.get("drawn") == found.get("plots"):
                break
            time.sleep(0.5)
        height = int(found.get("height") or 900)
        page.call("Emulation.setDeviceMetricsOverride", width=width, height=height,
                  deviceScaleFactor=1, mobile=False)  # fmt: skip
        time.sleep(1)
        shot = page.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)
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
