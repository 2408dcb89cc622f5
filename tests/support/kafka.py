"""Produce generated workloads for tests (the oracle reads them back: ``oracle.consume_all``);
read the alerts topic back as a reader does."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any

from kafka import KafkaConsumer, TopicPartition

from config.settings import Settings
from workload.generator import Record, WorkloadSpec, generate
from workload.producer import ProduceReport, produce


def small_spec(seed: int, start: datetime, span: timedelta) -> WorkloadSpec:
    """300 clean events (no late, re-sent or broken ones) of 30 users and 20 products."""
    return WorkloadSpec(
        events=300,
        users=30,
        products=20,
        seed=seed,
        start=start,
        span=span,
        late_fraction=0.0,
        duplicate_fraction=0.0,
        malformed_fraction=0.0,
    )


def event_record(
    event_id: str, kind: str, user: int, product: int, at: datetime, **extra: object
) -> Record:
    """One hand-made event of the shop's contract, sent at its event time, keyed by user."""
    body = {
        "event_id": event_id,
        "event_type": kind,
        "user_id": user,
        "product_id": product,
        "quantity": None,
        "price": None,
        "event_time": at.isoformat(timespec="milliseconds") + "Z",
        "sent_time": at.isoformat(timespec="milliseconds") + "Z",
        "schema_version": 1,
        **extra,
    }
    return Record("events", str(user).encode(), json.dumps(body).encode())


def produce_spec(
    settings: Settings, spec: WorkloadSpec, *, part: slice | None = None
) -> ProduceReport:
    """Produce a generated workload (or a slice of its records) and require every ack."""
    records = list(generate(spec))
    report = produce(settings, records[part] if part else records)
    assert report.failed == 0 and report.acknowledged == report.sent, report.as_dict()
    return report


def alert_records(
    settings: Settings, *, committed: bool = True
) -> list[tuple[str, dict[str, Any]]]:
    """Every record of the alerts topic as ``(key, value)``, read independently of the publisher.

    ``committed``: as a reader sees it (``read_committed``: aborted transactions are
    skipped); else every record written, aborted ones included.
    """
    topic = settings.kafka.alerts_topic
    consumer = KafkaConsumer(
        bootstrap_servers=settings.kafka.bootstrap_servers,
        enable_auto_commit=False,
        isolation_level="read_committed" if committed else "read_uncommitted",
    )
    try:
        partitions = [TopicPartition(topic, p) for p in consumer.partitions_for_topic(topic) or ()]
        assert partitions, f"topic {topic} does not exist"
        consumer.assign(partitions)
        consumer.seek_to_beginning()
        end = consumer.end_offsets(partitions)
        records: list[tuple[int, str, dict[str, Any]]] = []
        while any(consumer.position(tp) < end[tp] for tp in partitions):
            for batch in consumer.poll(timeout_ms=1_000).values():
                records += [(r.offset, r.key.decode(), json.loads(r.value)) for r in batch]
        return [(key, value) for _, key, value in sorted(records, key=lambda r: r[0])]
    finally:
        consumer.close()
