"""The scheduler pools: defined in the session, and a live query's jobs submitted to ``live``."""

from __future__ import annotations

import pytest

from lake.pools import LIVE, POOL, in_pool

pytestmark = pytest.mark.integration


def test_the_session_schedules_fairly_with_a_live_pool_served_first(spark):
    context = spark.sparkContext
    assert context.getConf().get("spark.scheduler.mode") == "FAIR"
    pool = context._jsc.sc().getPoolForName(LIVE).get()
    assert (pool.minShare(), pool.weight()) == (2, 10)


def test_a_query_started_in_the_pool_submits_its_micro_batches_jobs_there(spark, tmp_path):
    context = spark.sparkContext
    seen: list[str | None] = []

    def micro_batch(batch, _batch_id):
        seen.append(context.getLocalProperty(POOL))  # what Spark tags this thread's jobs with
        batch.count()

    source = spark.readStream.format("rate").option("rowsPerSecond", 100).load()
    with in_pool(spark, LIVE):
        query = (
            source.writeStream.foreachBatch(micro_batch)
            .option("checkpointLocation", str(tmp_path / "checkpoint"))
            .trigger(availableNow=True)
            .start()
        )
        assert context.getLocalProperty(POOL) == LIVE
    assert context.getLocalProperty(POOL) is None  # the block restores the thread's pool
    query.awaitTermination(60)
    assert seen and set(seen) == {LIVE}
