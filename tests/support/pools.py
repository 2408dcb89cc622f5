"""Which scheduler pools the session's jobs ran their stages in, read from Spark's status store."""

from __future__ import annotations

from collections.abc import Iterator

from pyspark.sql import SparkSession


def _jobs(spark: SparkSession) -> Iterator:
    jobs = spark.sparkContext._jsc.sc().statusStore().jobsList(None)  # None: every status
    it = jobs.iterator()
    while it.hasNext():
        yield it.next()


def last_job(spark: SparkSession) -> int:
    """The id of the newest job the session ran (-1: none yet)."""
    return max((job.jobId() for job in _jobs(spark)), default=-1)


def stage_pools(spark: SparkSession, after_job: int) -> set[str]:
    """The pools of the stages run by the jobs after ``after_job`` (stages skipped: none)."""
    store = spark.sparkContext._jsc.sc().statusStore()
    pools = set()
    for job in _jobs(spark):
        if job.jobId() <= after_job:
            continue
        ids = job.stageIds().iterator()
        while ids.hasNext():
            stage = store.lastStageAttempt(ids.next())
            if stage.status().toString() != "SKIPPED":
                pools.add(stage.schedulingPool())
    return pools
