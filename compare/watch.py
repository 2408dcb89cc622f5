"""Watching a design as its users do: through its serving layer's HTTP API, and when.

While a design runs, its read API (``lk serve``'s app: the design's refresher and
FastAPI on uvicorn) serves from the design's own process, as ``lk serve`` would beside
it. A watcher thread asks it over HTTP every ``poll_s``, as a user's client would, and
records when an answer first showed what it looks for: the time an answer came back is
when a reader could see it. The watcher runs no Spark job; what it costs is reported
(its GETs, their seconds). Each GET sends back the last answer's ETag, so a view that
has not changed since costs a ``304`` and no rows.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any

import httpx

from designs.platform import Platform
from infra.local import free_ports
from serving_layer.refresh import now as refresh_time
from serving_layer.snapshot import parse_timestamp

REVENUE = "revenue_by_category"


@dataclass
class Seen:
    """What the watcher observed, and what watching cost."""

    probe_first_seen: dict[int, float] = field(default_factory=dict)  # probe -> epoch s
    windows: list[tuple[float, dict[tuple, tuple]]] = field(default_factory=list)
    polls: int = 0
    gets: int = 0
    poll_seconds: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        """What watching cost and how it went, for ``results.json``."""
        polls = sorted(self.poll_seconds)
        return {
            "through": "the design's HTTP read API, in its process",
            "polls": self.polls,
            "gets": self.gets,
            "median_poll_s": polls[len(polls) // 2] if polls else None,
            "errors": self.errors[:5],
        }


class Served:
    """The design's read API on a free loopback port, in this process (a context manager).

    ``base_url`` answers as ``lk serve`` does; it is stopped with the context.
    """

    def __init__(self, spark: Any, platform: Platform) -> None:
        import uvicorn

        from serving_layer.api import create_app

        port = free_ports(1)[0]
        self.base_url = f"http://127.0.0.1:{port}"
        self.refresher = platform.refresher(spark=spark)
        app = create_app(self.refresher)
        config = uvicorn.Config(
            app, host="127.0.0.1", port=port, log_level="warning", access_log=False
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, name="lk-compare-serve", daemon=True
        )

    def __enter__(self) -> Served:
        self._thread.start()
        deadline = time.monotonic() + 60
        while not self._server.started and time.monotonic() < deadline:
            if not self._thread.is_alive():
                raise RuntimeError(f"the serving API did not start on {self.base_url}")
            time.sleep(0.05)
        return self

    def wait_current(self, timeout_s: float = 300.0) -> None:
        """Return once a refresh that began after this call has ended.

        The cycle in flight may have looked at the tables before the lane's last commit;
        the one after it began later, so what it published holds that commit.
        """
        deadline = time.monotonic() + timeout_s
        begun = refresh_time()
        for _ in range(2):
            while time.monotonic() < deadline:
                checked = self.refresher.state.checked_at
                if checked is not None and checked > begun:
                    begun = checked
                    break
                time.sleep(0.05)

    def __exit__(self, *exc: object) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=60)


class Client:
    """GETs of one view with the last answer's ETag; counts what it asked."""

    def __init__(self, base_url: str, seen: Seen) -> None:
        self._http = httpx.Client(base_url=base_url, timeout=30)
        self._etags: dict[str, str] = {}
        self._seen = seen

    def rows(self, view: str) -> list[dict[str, Any]] | None:
        """The view's rows if they changed since the last answer, else None."""
        headers = {"If-None-Match": self._etags[view]} if view in self._etags else {}
        reply = self._http.get(f"/views/{view}", headers=headers)
        self._seen.gets += 1
        if reply.status_code == 304:
            return None
        if reply.status_code != 200:
            raise RuntimeError(f"GET /views/{view}: {reply.status_code} {reply.text[:200]}")
        self._etags[view] = reply.headers["ETag"]
        return reply.json()


Look = Callable[[Client, Seen], None]


def shop_look(probe_base: int, windows_from: datetime) -> Look:
    """The shop's look: probe users' cart lines, and the live windows of revenue."""

    def look(client: Client, seen: Seen) -> None:
        carts = client.rows("cart_state")
        now = time.time()
        for row in carts or ():
            if row["user_id"] >= probe_base:
                seen.probe_first_seen.setdefault(row["user_id"], now)
        revenue = client.rows(REVENUE)
        now = time.time()
        if revenue is None and seen.windows:
            seen.windows.append((now, seen.windows[-1][1]))
            return
        windows: dict[tuple, tuple] = {}
        for row in revenue or ():
            start = parse_timestamp(row["window_start"])
            if start >= windows_from:
                amount = Decimal(repr(row["revenue"])).quantize(Decimal("0.01"))
                windows[(start, row["category"])] = (row["orders"], str(amount))
        seen.windows.append((now, windows))

    return look


class Watcher:
    """A thread asking the design's read API every ``poll_s`` (a context manager)."""

    def __init__(self, base_url: str, look: Look, poll_s: float = 1.0) -> None:
        self.seen = Seen()
        self._client = Client(base_url, self.seen)
        self._look, self.poll_s = look, poll_s
        self._looks = 0  # polls attempted, failed ones included
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="lk-compare-watch", daemon=True)

    def poll(self) -> None:
        """One look at the served views."""
        started = time.time()
        self._look(self._client, self.seen)
        self.seen.polls += 1
        self.seen.poll_seconds.append(time.time() - started)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.poll()
            except Exception as error:  # not served yet (503), a server restarting
                if len(self.seen.errors) < 20:
                    self.seen.errors.append(str(error).splitlines()[0][:300])
            self._looks += 1
            self._stop.wait(self.poll_s)

    def look_once_more(self, timeout_s: float = 600.0) -> None:
        """Return once a poll that began after this call has ended.

        The served views reload after the lane's last commit; a fixed pause could end
        the watch before any look saw what the lane last wrote.
        """
        target = self._looks + 2  # the look in flight may have begun before this call
        deadline = time.monotonic() + timeout_s
        while self._looks < target and self._thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.1)

    def __enter__(self) -> Watcher:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=120)
