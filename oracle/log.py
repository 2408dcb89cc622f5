"""What the oracle reads: a topic from its start to its current end, with a plain consumer.

No Spark and none of the platform's readers: the same bytes Kafka stores, in log order.
"""

from __future__ import annotations

from kafka import KafkaConsumer, TopicPartition

from lk.config import Settings
from oracle.records import RawRecord


def consume_all(settings: Settings, topic: str) -> list[RawRecord]:
    """Every record of ``topic`` from the beginning to the current end, in log order."""
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
                records += [RawRecord(m.partition, m.offset, m.key, m.value) for m in batch]
        return sorted(records, key=lambda r: (r.partition, r.offset))
    finally:
        consumer.close()
