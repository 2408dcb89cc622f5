"""A job on a thread of its own: in the caller's job group, its failure raised in the caller."""

from __future__ import annotations

import pytest

from lake.threads import in_background

pytestmark = pytest.mark.integration


def test_the_job_sees_the_callers_spark_properties_and_returns_its_result(spark):
    context = spark.sparkContext
    context.setLocalProperty("lk.test.micro_batch", "7")
    try:
        wait = in_background(
            lambda: (context.getLocalProperty("lk.test.micro_batch"), spark.range(5).count())
        )
        assert wait() == ("7", 5)
    finally:
        context.setLocalProperty("lk.test.micro_batch", None)


def test_a_failure_is_raised_in_the_caller():
    def fails() -> None:
        raise LookupError("no such offsets")

    wait = in_background(fails)
    with pytest.raises(LookupError, match="no such offsets"):
        wait()
