"""The live page in headless Chromium over a running Lambda platform on the real broker.

A batch run over a small history, then ``lk speed`` in a process of its own; the page is
served in this process (its watcher shares the test session's Spark). Events produced
while the page is open must move its lag and freshness panels; the batch run must show
as a mark on the time axis; a stopped speed layer must be shown as stopped.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import uvicorn

from config.settings import Settings, with_sections
from dashboard.app import Watcher, create_app
from dashboard.targets import configured
from lk import detached
from tests.conftest import REPO
from tests.support.env import lk_env
from tests.support.kafka import produce_spec
from workload.generator import WorkloadSpec

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(shutil.which("chromium") is None, reason="no system Chromium"),
]

#: What the page shows of the one design, read from its DOM and its plotly charts.
READ = """() => {
  const card = document.querySelector('.design');
  if (!card) return null;
  const field = name => card.querySelector(`[data-field=${name}]`).textContent;
  const chart = name => card.querySelector(`[data-chart=${name}]`);
  const points = gd => (gd.data || []).reduce((n, t) => n + t.y.filter(v => v !== null).length, 0);
  return {
    state: field('state'), lag: field('lag'), freshness: field('freshness'),
    marks: field('marks'), down: field('down'), serving: field('serving'),
    lag_points: points(chart('lag')), batch_points: points(chart('batches')),
    shapes: ((chart('lag').layout || {}).shapes || []).length,
    rows: card.querySelectorAll('[data-field=rows] tr').length,
  };
}"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def platform(spark, topic_settings: Settings, tmp_path: Path) -> Iterator[Settings]:
    """A published batch run over a small history, then ``lk speed`` running on."""
    from batch_layer.job import run_batch
    from designs.platform import build

    settings = with_sections(topic_settings, watchdog={"home": tmp_path / "speed"})
    produce_spec(settings, WorkloadSpec(events=1_000, users=20, products=10, seed=3))
    assert run_batch(spark, settings, build(settings).registry).run.status == "published"
    env = {**os.environ, **lk_env(settings, LK_WATCHDOG__HOME=str(tmp_path / "speed"))}
    log = (tmp_path / "speed.log").open("w")
    speed = subprocess.Popen(
        [sys.executable, "-m", "lk.cli.app", "speed"],
        cwd=REPO,
        env=env,
        stdout=log,
        stderr=log,
        start_new_session=True,  # its JVM goes with it when its group is stopped
    )
    try:
        yield settings
    finally:
        if speed.poll() is None:
            os.killpg(speed.pid, signal.SIGTERM)
            speed.wait(timeout=120)
        log.close()


@pytest.fixture
def page_url(platform: Settings) -> Iterator[str]:
    """The dashboard over ``platform``, served on a free loopback port."""
    watcher = Watcher(
        platform,
        lambda: configured(platform),
        interval=1.0,
        probe=lambda s: detached.running(s, detached.SPEED_PROCESS) is not None,
    )
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(create_app(watcher), host="127.0.0.1", port=port, log_level="warning")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}/"
    finally:
        server.should_exit = True
        thread.join(timeout=120)


def wait_for(read: Callable[[], dict | None], check: Callable[[dict], bool], what: str) -> dict:
    deadline = time.monotonic() + 300
    seen = None
    while time.monotonic() < deadline:
        seen = read()
        if seen and check(seen):
            return seen
        time.sleep(1)
    raise AssertionError(f"{what}: the page still shows {seen}")


@pytest.mark.timeout(1500)
def test_the_page_follows_the_platform_live(
    platform: Settings, page_url: str, tmp_path: Path
) -> None:
    from compare.screenshot import browser

    with browser() as chromium:
        page = chromium.new_page(viewport={"width": 1300, "height": 1000})
        page.route("http*://**", lambda r: r.continue_() if "127.0.0.1" in r.request.url
                   else r.abort())  # fmt: skip
        page.goto(page_url)

        def read() -> dict | None:
            return page.evaluate(READ)

        marked = wait_for(read, lambda s: s["shapes"] >= 1, "the batch run as a mark")
        assert "batch run" in marked["marks"] and "published" in marked["marks"]
        assert "batch run" in marked["serving"]

        produce_spec(platform, WorkloadSpec(events=1_000, users=20, products=10, seed=4))
        first = wait_for(
            read,
            lambda s: (
                s["batch_points"] > 0
                and s["freshness"] != "-"
                and ("running" in s["state"] or "caught up" in s["state"])
            ),
            "the speed layer's first micro-batches",
        )
        assert first["rows"] > 1  # the view's header and at least one row
        page.screenshot(path=str(tmp_path / "first.png"), full_page=True)

        produce_spec(platform, WorkloadSpec(events=1_500, users=20, products=10, seed=5))
        wait_for(
            read,
            lambda s: (
                s["batch_points"] > first["batch_points"]
                and s["lag_points"] > first["lag_points"]
                and s["freshness"] != first["freshness"]
            ),
            "new micro-batches, lag readings and freshness after producing more",
        )
        page.screenshot(path=str(tmp_path / "live.png"), full_page=True)
        if target := os.environ.get("LK_DASHBOARD_SCREENSHOT"):
            page.screenshot(path=target, full_page=True)

        detached.stop(platform, detached.SPEED_PROCESS)
        produce_spec(platform, WorkloadSpec(events=300, users=20, products=10, seed=6))
        stopped = wait_for(
            read,
            lambda s: "stopped" in s["state"] and s["lag"] not in ("0", "-"),
            "the stopped speed layer, with events waiting",
        )
        assert "stopped" in stopped["state"]
        page.screenshot(path=str(tmp_path / "stopped.png"), full_page=True)
