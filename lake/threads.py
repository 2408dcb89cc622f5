"""A Spark job (or any driver work) on a thread of its own, its result awaited later.

The batch run lands bronze while it quarantines the malformed records; a micro-batch
counts its rows while it plans the views. On two cores most of a small job's time is
the driver's planning, which overlaps another job's tasks. A lane packs its files while
its next micro-batch runs (:class:`OneAtATime`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from pyspark import InheritableThread

T = TypeVar("T")
log = logging.getLogger(__name__)


def in_background(job: Callable[[], T]) -> Callable[[], T]:
    """Start ``job`` on a thread of its own; the function returned waits for its result.

    The thread inherits the caller's Spark local properties (``InheritableThread``), so
    a Spark job it runs belongs to the caller's job group; an exception is raised again
    in the caller.
    """
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["value"] = job()
        except BaseException as error:  # raised again by wait(), in the caller's thread
            outcome["error"] = error

    thread = InheritableThread(target=run, daemon=True)
    thread.start()

    def wait() -> T:
        thread.join()
        if "error" in outcome:
            raise outcome["error"]
        return outcome["value"]

    return wait


class OneAtATime:
    """Jobs on a thread of their own, one at a time: a job offered while one runs is skipped.

    For upkeep that changes no answer and can wait for its next turn (a lane's file
    packing), run beside the work a reader waits on instead of before it. A job that
    fails is logged, not raised: the next one offered runs as usual.
    """

    def __init__(self) -> None:
        self._thread: threading.Thread | None = None
        #: how many jobs ran and how many were skipped for one still running
        self.ran = 0
        self.skipped = 0

    def offer(self, name: str, job: Callable[[], object]) -> bool:
        """Start ``job`` unless one still runs; returns whether it started."""
        if self._thread is not None and self._thread.is_alive():
            self.skipped += 1
            return False

        def run() -> None:
            try:
                job()
            except Exception:  # nothing waits on it: say so, and let the next one run
                log.warning("%s failed; the next one runs at its turn", name, exc_info=True)

        self.ran += 1
        self._thread = InheritableThread(target=run, name=name, daemon=True)
        self._thread.start()
        return True

    def wait(self) -> None:
        """Wait for the job that runs, if any."""
        if self._thread is not None:
            self._thread.join()
