"""A Spark job (or any driver work) on a thread of its own, its result awaited later.

The batch run lands bronze while it quarantines the malformed records; a micro-batch
counts its rows while it plans the views. On two cores most of a small job's time is
the driver's planning, which overlaps another job's tasks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from pyspark import InheritableThread

T = TypeVar("T")


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
