"""A lane whose log is away restarts for a while, backing off; Spark's restart bug once."""

from __future__ import annotations

import pytest

from speed_layer import restarts

pytestmark = pytest.mark.unit


def test_an_outage_lasts_until_a_micro_batch_commits(monkeypatch):
    now = [0.0]
    monkeypatch.setattr(restarts.time, "monotonic", lambda: now[0])
    outage = restarts.Outage(limit_s=60)
    assert outage.goes_on(batches=3)
    now[0] = 30
    assert outage.goes_on(batches=3)
    assert (outage.restarts, outage.backoff_s) == (2, 2.0)
    now[0] = 61
    assert not outage.goes_on(batches=3)  # a minute with no micro-batch: give up
    assert outage.goes_on(batches=4)  # one committed since: a new outage, a new minute
    assert (outage.restarts, outage.backoff_s) == (1, 1.0)


def test_restarts_back_off_to_at_most_half_a_minute():
    outage = restarts.Outage(limit_s=3600)
    for _ in range(10):
        outage.goes_on(batches=0)
    assert outage.backoff_s == 30


def test_spark_s_npe_after_a_crash_restart_is_told_from_other_failures():
    npe = RuntimeError(
        'java.lang.NullPointerException: Cannot invoke "scala.Option.get()"\n'
        "\tat org.apache.spark.sql.kafka010.KafkaMicroBatchStream.metrics(...)"
    )
    assert restarts.is_restart_metrics_bug(npe)
    assert not restarts.is_restart_metrics_bug(RuntimeError("TimeoutException: no node"))
