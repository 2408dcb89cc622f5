"""When the broker acknowledged the newest record a micro-batch read: freshness's start.

A record's Kafka timestamp is the producer's create time (or the broker's append time):
within a few milliseconds of the acknowledgement, so ``finished - timestamp`` of a
micro-batch's newest record is how long that event took to become visible.
"""

from __future__ import annotations

from kafka import KafkaConsumer, TopicPartition

from config.settings import Settings


class RecordTimes:
    """Timestamps of single records, looked up once each through one open consumer."""

    def __init__(self, settings: Settings, topic: str) -> None:
        self.settings = settings
        self.topic = topic
        self._consumer: KafkaConsumer | None = None
        self._seen: dict[tuple[int, int], float | None] = {}

    def at(self, partition: int, offset: int) -> float | None:
        """Epoch seconds of the record at ``offset`` (None if it is gone or unreadable)."""
        key = (partition, offset)
        if key not in self._seen:
            self._seen[key] = self._read(partition, offset)
        return self._seen[key]

    def _read(self, partition: int, offset: int) -> float | None:
        if self._consumer is None:
            self._consumer = KafkaConsumer(
                bootstrap_servers=self.settings.kafka.bootstrap_servers,
                group_id=None,
                enable_auto_commit=False,
                client_id="lk-dashboard",
                consumer_timeout_ms=2_000,
            )
        tp = TopicPartition(self.topic, partition)
        self._consumer.assign([tp])
        self._consumer.seek(tp, offset)
        for records in self._consumer.poll(timeout_ms=2_000, max_records=1).values():
            for record in records:
                if record.offset == offset:
                    return record.timestamp / 1000
        return None

    def close(self) -> None:
        """Close the consumer."""
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None
