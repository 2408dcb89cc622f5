"""Read topics back with a plain consumer: what the oracle sees."""

from __future__ import annotations

from kafka import KafkaConsumer, TopicPartition

import oracle
from event_log.generator import WorkloadSpec, generate
from event_log.producer import ProduceReport, produce
from lk.config import Settings


def consume_all(settings: Settings, topic: str) -> list[oracle.RawRecord]:
    """Every record of ``topic`` from the beginning to the current end, in log order."""
    consumer = KafkaConsumer(
        bootstrap_servers=settings.kafka.bootstrap_servers,
        enable_auto_commit=False,
        consumer_timeout_ms=10_000,
    )
    try:
        partitions = [TopicPartition(topic, p) for p in consumer.partitions_for_topic(topic)]
        consumer.assign(partitions)
        consumer.seek_to_beginning()
        end = consumer.end_offsets(partitions)
        records: list[oracle.RawRecord] = []
        while any(consumer.position(tp) < end[tp] for tp in partitions):
            for batch in consumer.poll(timeout_ms=1_000).values():
                records += [oracle.RawRecord(m.partition, m.offset, m.key, m.value) for m in batch]
        return sorted(records, key=lambda r: (r.partition, r.offset))
    finally:
        consumer.close()


def produce_spec(
    settings: Settings, spec: WorkloadSpec, *, part: slice | None = None
) -> ProduceReport:
    """Produce a generated workload (or a slice of its records) and require every ack."""
    records = list(generate(spec))
    report = produce(settings, records[part] if part else records)
    assert report.failed == 0 and report.acknowledged == report.sent, report.as_dict()
    return report
