"""Bounded reads of the real topic: long offset ranges are split, nothing is lost or doubled."""

from __future__ import annotations

import math

import pytest
from pyspark.sql import functions as F

from event_log import kafka_source
from event_log.topics import end_offsets
from tests.support.kafka import produce_spec
from workload.generator import WorkloadSpec

pytestmark = pytest.mark.integration


def test_a_long_range_is_read_in_bounded_tasks(spark, topic_settings, monkeypatch):
    settings = topic_settings
    produce_spec(settings, WorkloadSpec(events=1_200, users=30, products=20, seed=5))
    topic = settings.kafka.events_topic
    end = end_offsets(settings, topic)
    total = sum(end.values())
    monkeypatch.setattr(kafka_source, "OFFSETS_PER_TASK", 200)

    frame = kafka_source.read_range(spark, settings, topic, {}, end)

    assert frame.rdd.getNumPartitions() >= math.ceil(total / 200) > len(end)
    assert max(frame.rdd.mapPartitions(lambda rows: [sum(1 for _ in rows)]).collect()) <= 200
    offsets = frame.select("partition", "offset")
    assert offsets.count() == total
    assert offsets.distinct().count() == total
    per_partition = {
        r["partition"]: r["n"]
        for r in offsets.groupBy("partition").agg(F.count("*").alias("n")).collect()
    }
    assert per_partition == {p: o for p, o in end.items() if o}
