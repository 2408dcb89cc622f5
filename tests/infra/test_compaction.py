from __future__ import annotations

import time

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.consumer.fetcher import ConsumerRecord

from config.settings import Settings

pytestmark = pytest.mark.integration

KEYS = [f"sku-{i}" for i in range(10)]
VERSIONS = 5
DELETED = KEYS[:3]
ROLL_KEY = b"__roll__"


def read_all(settings: Settings, topic: str) -> list[ConsumerRecord]:
    """Every record from the beginning of every partition up to the current end."""
    consumer = KafkaConsumer(
        bootstrap_servers=settings.kafka.bootstrap_servers, group_id=None, enable_auto_commit=False
    )
    try:
        tps = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic))]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        end = consumer.end_offsets(tps)
        records: list[ConsumerRecord] = []
        deadline = time.monotonic() + 30
        while any(consumer.position(tp) < end[tp] for tp in tps):
            assert time.monotonic() < deadline, "could not read the topic to its end"
            for batch in consumer.poll(timeout_ms=500).values():
                records.extend(batch)
        return records
    finally:
        consumer.close()


def rebuild(records: list[ConsumerRecord]) -> dict[str, str]:
    """What a reader rebuilding the table sees: latest value per key, tombstones delete."""
    table: dict[str, str] = {}
    for record in records:
        if record.key == ROLL_KEY:
            continue
        if record.value is None:
            table.pop(record.key.decode(), None)
        else:
            table[record.key.decode()] = record.value.decode()
    return table


def test_compaction_keeps_only_the_latest_value_per_key(topic_settings: Settings) -> None:
    topic = topic_settings.kafka.catalog_topic
    producer = KafkaProducer(bootstrap_servers=topic_settings.kafka.bootstrap_servers)
    for version in range(VERSIONS):  # interleaved, so old versions sit throughout the segment
        for key in KEYS:
            producer.send(topic, key=key.encode(), value=f"{key}@v{version}".encode())
    for key in DELETED:
        producer.send(topic, key=key.encode(), value=None)
    producer.flush()
    produced = len(KEYS) * VERSIONS + len(DELETED)
    expected = {key: f"{key}@v{VERSIONS - 1}" for key in KEYS if key not in DELETED}

    deadline = time.monotonic() + 60
    while True:
        # The active segment is never cleaned: an append after segment.ms (10 s) rolls it.
        producer.send(topic, key=ROLL_KEY, value=b"roll")
        producer.flush()
        records = [r for r in read_all(topic_settings, topic) if r.key != ROLL_KEY]
        per_key = [r.key for r in records]
        if len(per_key) == len(set(per_key)):
            break
        assert time.monotonic() < deadline, f"not compacted after 60 s: {len(records)} records"
        time.sleep(2)
    producer.close()

    assert rebuild(records) == expected
    assert len(records) < produced
    survivors = {r.key.decode(): r.value for r in records}
    assert all(survivors[k] is None for k in DELETED if k in survivors)  # lingering tombstones
    assert all(survivors[k] == expected[k].encode() for k in expected)
