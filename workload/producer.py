"""Publish records to Kafka with an idempotent producer; count every acknowledgement.

Nothing acknowledged is lost (``acks=all`` plus idempotence), and nothing is dropped
silently: the client retries retriable errors until ``delivery_timeout_ms`` (a broker
that restarts within it costs nothing), and a record that still fails is reported by its
position in the records sent, with its error. If the client gives up before it could even
hand a record over (``max_block_ms``), the run stops there and says so: every record
from that position on is unsent.
"""

from __future__ import annotations

import logging
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any

from kafka import KafkaProducer
from kafka.errors import KafkaError
from kafka.partitioner.default import murmur2
from kafka.producer.future import FutureRecordMetadata

from config.settings import Settings
from workload.generator import Record

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
    unsent: list[int] = field(default_factory=list)
    stopped_at: int | None = None

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
            "unsent_positions": self.unsent,
            "stopped_at": self.stopped_at,
        }

    def describe_unsent(self) -> str:
        """Which records did not make it, by position in the records given (0-based)."""
        parts = []
        if self.unsent:
            shown = ", ".join(map(str, self.unsent[:50]))
            more = f" and {len(self.unsent) - 50} more" if len(self.unsent) > 50 else ""
            parts.append(f"not acknowledged: positions {shown}{more}")
        if self.stopped_at is not None:
            parts.append(f"stopped: records from position {self.stopped_at} on were never sent")
        return "; ".join(parts) or "every record was acknowledged"


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
    """Send ``records`` in order to their topics; block until every one is acked or failed.

    Every record ends up counted once, as acknowledged or as failed with its error. The
    futures of sent records are settled in send order every ``progress_every`` records
    (cheaper than two callbacks per record) and all at the end, after ``flush``.
    ``on_progress`` gets the number of records sent since its previous call.
    """
    topics = {"events": settings.kafka.events_topic, "catalog": settings.kafka.catalog_topic}
    report = ProduceReport()
    pending: deque[tuple[int, FutureRecordMetadata]] = deque()
    kinds: dict[str, int] = {}
    sent = 0
    producer = KafkaProducer(**producer_config(settings))
    partition = _Partitions(producer)
    send, track = producer.send, pending.append
    started = time.perf_counter()
    try:
        for record in records:
            topic = topics[record.topic]
            key = record.key
            try:
                future = send(
                    topic,
                    key=key,
                    value=record.value,
                    partition=partition(topic, key),
                    timestamp_ms=record.timestamp_ms,
                )
            except KafkaError as error:  # not even handed over: stop here and say so
                report.stopped_at = sent
                report.errors.append(f"position {sent}: {error!r}")
                log.error("produce stopped at position %d: %r", sent, error)
                break
            track((sent, future))
            kind = record.kind
            kinds[kind] = kinds.get(kind, 0) + 1
            sent += 1
            if sent % progress_every == 0:
                _settle(pending, report)
                if on_progress:
                    on_progress(progress_every)
        producer.flush()
        _settle(pending, report, wait=True)
    finally:
        report.sent = sent
        report.by_kind.update(kinds)
        producer.close()
        report.seconds = time.perf_counter() - started
        _settle(pending, report)  # after an error: count what did finish
    if on_progress:
        on_progress(report.sent % progress_every)
    log.info("produce finished", extra={"report": report.as_dict()})
    return report


class _Partitions:
    """``(topic, key) -> partition`` as the default partitioner picks it, memoized.

    kafka-python's partitioner hashes every key in pure Python (murmur2); a workload has
    few distinct keys (users, products), so looking the answer up is much cheaper. The
    partition count is read once per topic from the producer's metadata.
    """

    def __init__(self, producer: KafkaProducer) -> None:
        self._producer = producer
        self._known: dict[str, dict[bytes, int]] = {}

    def __call__(self, topic: str, key: bytes | None) -> int | None:
        if key is None:
            return None  # no key: let the producer spread records (sticky partitioner)
        known = self._known.get(topic)
        if known is None:
            known = self._known[topic] = {}
        found = known.get(key)
        if found is None:
            count = len(self._producer.partitions_for(topic))
            found = known[key] = partition_for(key, count)
        return found


def _settle(
    pending: deque[tuple[int, FutureRecordMetadata]], report: ProduceReport, *, wait: bool = False
) -> None:
    """Count the finished futures at the front of ``pending`` (all of them if ``wait``)."""
    while pending:
        position, future = pending[0]
        if not future.is_done:
            if not wait:
                return
            with suppress(Exception):  # a failure is read from the future just below
                future.get()
        pending.popleft()
        if future.exception is None:
            report.acknowledged += 1
        else:
            report.failed += 1
            report.unsent.append(position)
            if len(report.errors) < 100:
                report.errors.append(f"position {position}: {future.exception!r}")
