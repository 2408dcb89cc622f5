"""Around a micro-batch's Spark jobs: the caches it held, dropped after.

The processor caches the batch and the join partners for the length of one micro-batch
(or rebase); this is that plumbing, kept apart from what the micro-batch computes.
"""

from __future__ import annotations

from pyspark.sql import DataFrame


def release(held: list[DataFrame]) -> None:
    """Drop the cached frames of a micro-batch (or a rebase) once it committed or failed.

    Newest first: a frame cached from an earlier one (the join partners, from the batch)
    goes before what it was computed from. Dropping the earlier one first makes Spark's
    cache manager plan the later one again if its cache is not complete (a micro-batch
    that failed before its write), Delta's file listing included, for nothing.
    """
    while held:
        held.pop().unpersist()
