"""Around a micro-batch's Spark jobs: one run on a thread of its own, the caches dropped after.

The processor overlaps its counting pass with building the views' plans, and caches the
batch and the join partners for the length of one micro-batch (or rebase); these two
helpers are that plumbing, kept apart from what the micro-batch computes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from pyspark import InheritableThread
from pyspark.sql import DataFrame

T = TypeVar("T")


def release(held: list[DataFrame]) -> None:
    """Drop the cached frames of a micro-batch (or a rebase) once it committed or failed.

    Newest first: a frame cached from an earlier one (the join partners, from the batch)
    goes before what it was computed from. Dropping the earlier one first makes Spark's
    cache manager plan the later one again if its cache is not complete (a micro-batch
    that failed before its write), Delta's file listing included, for nothing.
    """
    while held:
        held.pop().unpersist()


def in_background(job: Callable[[], T]) -> Callable[[], T]:
    """Start ``job`` on a thread of its own; the function returned waits for its result.

    The thread inherits the caller's Spark local properties (``InheritableThread``), so
    a Spark job it runs belongs to the same micro-batch; an exception is raised again
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
