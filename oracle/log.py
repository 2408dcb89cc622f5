"""What the oracle reads: a topic from its start to its current end, with a plain consumer.

No Spark and none of the platform's readers: the same bytes Kafka stores, in log order.
"""

from __future__ import annotations

import time

from kafka import KafkaConsumer, TopicPartition
from kafka.errors import KafkaError

from config.settings import Settings
from oracle.records import RawRecord


def consume_all(settings: Settings, topic: str, patience: float = 60.0) -> list[RawRecord]:
    """Every record of ``topic`` from the beginning to the current end, in log order.

    A retriable Kafka error (a node of a cluster that just died is still in the metadata,
    a partition's leader is moving) starts the read over, for up to ``patience`` seconds.
    """
    deadline = time.monotonic() + patience
    while True:
        try:
            return _read(settings, topic)
        except KafkaError as err:
            if not err.retriable or time.monotonic() > deadline:
                raise
            time.sleep(1.0)


def _read(settings: Settings, topic: str) -> list[RawRecord]:
    consumer = KafkaConsumer(
        bootstrap_servers=settings.kafka.bootstrap_servers,
        enable_auto_commit=False,
        consumer_timeout_ms=10_000,
    )
    try:
        partitions = [TopicPartition(topic, p) for p in consumer.partitions_for_topic(topic) or ()]
        consumer.assign(partitions)
        consumer.seek_to_beginning()
        end = consumer.end_offsets(partitions)
        records: list[RawRecord] = []
        while any(consumer.position(tp) < end[tp] for tp in partitions):
            for batch in consumer.poll(timeout_ms=1_000).values():
                records += [
                    RawRecord(m.partition, m.offset, m.key, m.value, m.timestamp) for m in batch
                ]
        return sorted(records, key=lambda r: (r.partition, r.offset))
    finally:
        consumer.close()
