"""Produce a seeded workload to a real broker and read back exactly what was generated."""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator

import pytest
from kafka import KafkaConsumer, TopicPartition

from config.settings import Settings
from workload.generator import Record, WorkloadSpec, generate, generate_ahead
from workload.producer import partition_for, produce

pytestmark = pytest.mark.integration

SPEC = WorkloadSpec(events=3_000, users=50, products=30, seed=21, malformed_fraction=0.02)
Log = dict[int, list[tuple[bytes | None, bytes | None]]]


def expected_log(records: list[Record], topic: str, partitions: int) -> Log:
    """Per partition, the (key, value) pairs in the order Kafka must store them."""
    log: Log = defaultdict(list)
    for record in records:
        if record.topic == topic:
            log[partition_for(record.key, partitions)].append((record.key, record.value))
    return dict(log)


def read_log(settings: Settings, topic: str) -> Log:
    """Every record of ``topic``, per partition in offset order, up to the current end."""
    consumer = KafkaConsumer(
        bootstrap_servers=settings.kafka.bootstrap_servers, group_id=None, enable_auto_commit=False
    )
    try:
        tps = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic))]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        end = consumer.end_offsets(tps)
        log: dict[int, list] = {tp.partition: [] for tp in tps if end[tp]}
        deadline = time.monotonic() + 60
        while any(consumer.position(tp) < end[tp] for tp in tps):
            assert time.monotonic() < deadline, "timed out reading back"
            for tp, batch in consumer.poll(timeout_ms=1_000).items():
                for message in batch:
                    assert message.offset == len(log[tp.partition])  # nothing skipped
                    log[tp.partition].append((message.key, message.value))
        return log
    finally:
        consumer.close()


Source = Callable[[WorkloadSpec], Iterator[Record]]


@pytest.mark.parametrize("source", [generate, generate_ahead], ids=["inline", "ahead"])
def test_produce_stores_exactly_the_generated_records_in_order(
    topic_settings: Settings, source: Source
) -> None:
    records = list(generate(SPEC))
    progress: list[int] = []
    report = produce(topic_settings, source(SPEC), on_progress=progress.append)

    assert report.failed == 0 and not report.errors, report.as_dict()
    assert report.sent == report.acknowledged == len(records)
    assert report.by_kind == Counter(r.kind for r in records)
    assert sum(progress) == len(records)

    kafka = topic_settings.kafka
    for topic, partitions in (
        (kafka.events_topic, kafka.events_partitions),
        (kafka.catalog_topic, kafka.catalog_partitions),
    ):
        kind = "events" if topic == kafka.events_topic else "catalog"
        assert read_log(topic_settings, topic) == expected_log(records, kind, partitions), topic
    # The events really spread over the partitions (keys are user ids).
    assert len(expected_log(records, "events", kafka.events_partitions)) == kafka.events_partitions
