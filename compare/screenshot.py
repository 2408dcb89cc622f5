"""Pages opened in headless Chromium through Playwright: the report and the live page.

Playwright drives the system's Chromium (no browser download); it is a dev dependency, so
it is imported only when a page is opened. Run: ``python -m compare.screenshot REPORT.html
OUT.png`` to check a report's plots rendered and save a full-page PNG.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from playwright.sync_api import Browser

#: Plots whose SVG carries drawn marks (points or bars), not just empty axes.
#: ``plots`` counts the containers in the page's HTML (there before plotly draws anything).
COUNT_PLOTS = """() => {
  const plots = [...document.querySelectorAll('.plotly-graph-div')];
  const drawn = plots.filter(p => p.querySelectorAll('.point, .bars path').length > 0);
  return {plots: plots.length, drawn: drawn.length, height: document.body.scrollHeight};
}"""


def executable() -> str | None:
    """The system's Chromium, or None when it is not installed."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if found := shutil.which(name):
            return found
    return None


@contextmanager
def browser() -> Iterator[Browser]:
    """A headless system Chromium under Playwright, closed on exit."""
    from playwright.sync_api import sync_playwright

    path = executable()
    if path is None:
        raise RuntimeError("no Chromium on the PATH (infra/install-system-deps.sh chromium)")
    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=path, args=["--no-sandbox"])
        try:
            yield chromium
        finally:
            chromium.close()


def screenshot(report: Path, out: Path, width: int = 1200) -> dict[str, Any]:
    """Open ``report`` offline, save a full-page PNG to ``out``; the plots it counted."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    with browser() as chromium:
        page = chromium.new_page(viewport={"width": width, "height": 900})
        page.route("http*://**", lambda route: route.abort())  # offline: nothing but the file
        page.goto(report.resolve().as_uri(), wait_until="load")
        with contextlib.suppress(PlaywrightTimeout):  # the counts below say what did not draw
            page.wait_for_function(
                f"(() => {{ const c = ({COUNT_PLOTS})(); return c.plots && c.drawn == c.plots; }})",
                timeout=30_000,
            )
        found: dict[str, Any] = page.evaluate(COUNT_PLOTS)
        page.screenshot(path=str(out), full_page=True)
    return {"png": str(out), "bytes": out.stat().st_size, **found}


def main(argv: list[str]) -> int:
    """``python -m compare.screenshot REPORT.html OUT.png``."""
    Path(argv[1]).parent.mkdir(parents=True, exist_ok=True)
    found = screenshot(Path(argv[0]), Path(argv[1]))
    print(json.dumps(found))
    return 0 if found.get("plots") and found.get("drawn") == found.get("plots") else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
