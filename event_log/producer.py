"""Publish records to Kafka with an idempotent producer; count every acknowledgement.

Nothing acknowledged is lost (``acks=all`` plus idempotence), and nothing is dropped
silently: the client retries retriable errors until ``delivery_timeout_ms``, and a record
that still fails is counted and reported with its error.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from kafka import KafkaProducer
from kafka.partitioner.default import murmur2

from event_log.generator import Record
from lk.config import Settings

log = logging.getLogger(__name__)


@dataclass
class ProduceReport:
    """What a produce run did: sent, acknowledged, failed, and how fast."""

    sent: int = 0
    acknowledged: int = 0
    failed: int = 0
    seconds: float = 0.0
    by_kind: Counter[str] = field(default_factory=Counter)
    errors: list[str] = field(default_factory=list)

    @property
    def events_per_second(self) -> float:
        """Acknowledged records per second of wall time."""
        return self.acknowledged / self.seconds if self.seconds else 0.0

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready summary."""
        return {
            "sent": self.sent,
            "acknowledged": self.acknowledged,
            "failed": self.failed,
            "seconds": round(self.seconds, 3),
            "events_per_second": round(self.events_per_second, 1),
            "by_kind": dict(self.by_kind),
            "errors": self.errors[:20],
        }


def producer_config(settings: Settings) -> dict[str, Any]:
    """kafka-python settings: idempotent, ``acks=all``, batched and compressed."""
    kafka = settings.kafka
    return {
        "bootstrap_servers": kafka.bootstrap_servers.split(","),
        "acks": "all",
        "enable_idempotence": True,
        "linger_ms": kafka.producer_linger_ms,
        "batch_size": kafka.producer_batch_size,
        "compression_type": None
        if kafka.producer_compression == "none"
        else kafka.producer_compression,
        "max_in_flight_requests_per_connection": 5,
        "buffer_memory": 64 * 1024 * 1024,
        "client_id": "lk-producer",
    }


def partition_for(key: bytes, partitions: int) -> int:
    """The partition Kafka's default partitioner picks for ``key`` (murmur2)."""
    return (murmur2(key) & 0x7FFFFFFF) % partitions


def produce(
    settings: Settings,
    records: Iterable[Record],
    on_progress: Callable[[int], None] | None = None,
    progress_every: int = 2_000,
) -> ProduceReport:
    """Send ``records`` in order to their topics; block until every one is acked or failed."""
    topics = {"events": settings.kafka.events_topic, "catalog": settings.kafka.catalog_topic}
    report = ProduceReport()

    def acked(_: Any) -> None:
        report.acknowledged += 1

    def failed(error: BaseException) -> None:
        report.failed += 1
        if len(report.errors) < 100:
            report.errors.append(repr(error))

    producer = KafkaProducer(**producer_config(settings))
    started = time.perf_counter()
    try:
        for record in records:
            future = producer.send(topics[record.topic], key=record.key, value=record.value)
            future.add_callback(acked).add_errback(failed)
            report.sent += 1
            report.by_kind[record.kind] += 1
            if on_progress and report.sent % progress_every == 0:
                on_progress(progress_every)
        producer.flush()
    finally:
        producer.close()
        report.seconds = time.perf_counter() - started
    if on_progress:
        on_progress(report.sent % progress_every)
    log.info("produce finished", extra={"report": report.as_dict()})
    return report
