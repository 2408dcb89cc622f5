"""Spark scheduler pools: the live work is served before a recompute sharing its session.

Where one driver runs both, as ``lk compare`` runs Lambda's nightly batch run while its
speed lane and serving layer answer the watcher, Spark's default FIFO scheduler gives
the cores to whichever job was submitted first: a batch run's stages over the whole
history held every core, and each micro-batch's tasks waited behind them. With the fair
scheduler (``spark.scheduler_pools``, on by default) the live lane's and serving's jobs
run in the ``live`` pool (``pools.xml``: a minimum share of two cores, ten times the
weight), everything else in Spark's ``default`` pool: a free core goes to a waiting
live task first. A live lane's alerts, read from the views it serves every few seconds,
run in ``default`` too (:data:`DEFAULT`): they took a third of a live lane's task time at
5,000 events/s, on the cores its next micro-batch was waiting for. Spark never
pre-empts a running task, so a live task still waits for the core it needs to finish
its current task. Processes of their own (``lk speed`` and
``lk batch`` from Airflow) are untouched: the pools act inside one driver.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pyspark.sql import SparkSession

#: the pool of the work a reader waits on: a live lane's micro-batches, serving's reloads
LIVE = "live"
#: Spark's own pool, of the work nobody waits on: a recompute, a live lane's alerts
DEFAULT = "default"
#: the pools' definitions, what ``spark.scheduler.allocation.file`` names
ALLOCATION_FILE = Path(__file__).with_name("pools.xml")
POOL = "spark.scheduler.pool"


@contextmanager
def in_pool(spark: SparkSession, pool: str) -> Iterator[None]:
    """Submit this thread's jobs to ``pool`` for the block, then to the pool before.

    A streaming query started in the block keeps the pool for its micro-batches (Spark
    copies the starting thread's properties to the query's thread). The property is the
    thread's own, so a block on one thread leaves every other thread's jobs where they were.
    """
    context = spark.sparkContext
    before = context.getLocalProperty(POOL)
    context.setLocalProperty(POOL, pool)
    try:
        yield
    finally:
        context.setLocalProperty(POOL, before)  # type: ignore[arg-type]  # None unsets it
