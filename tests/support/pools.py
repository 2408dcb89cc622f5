"""Which scheduler pools the session's stages ran in, read from Spark's status store."""

from __future__ import annotations

from collections.abc import Iterator

from pyspark.sql import SparkSession


def _stages(spark: SparkSession) -> Iterator:
    """The stages the status store still holds (the newest ``spark.ui.retainedStages``)."""
    context = spark.sparkContext
    jvm = context._jvm
    every = jvm.java.util.ArrayList()  # no status named: every status
    stages = (
        context._jsc.sc()
        .statusStore()
        .stageList(every, False, False, context._gateway.new_array(jvm.double, 0), every)
    )
    it = stages.iterator()
    while it.hasNext():
        yield it.next()


def last_stage(spark: SparkSession) -> int:
    """The id of the newest stage the session ran (-1: none yet)."""
    return max((stage.stageId() for stage in _stages(spark)), default=-1)


def stage_pools(spark: SparkSession, after_stage: int) -> set[str]:
    """The pools of the stages run after ``after_stage`` that the store still holds.

    Stage ids only grow, so the newest are held; skipped stages ran nowhere and are left out.
    """
    return {
        stage.schedulingPool()
        for stage in _stages(spark)
        if stage.stageId() > after_stage and stage.status().toString() != "SKIPPED"
    }
