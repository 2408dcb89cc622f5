"""Create the platform's topics and read or trim their offsets (names always from settings)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

import kafka.errors as kafka_errors
from kafka import KafkaAdminClient, KafkaConsumer, TopicPartition

from config.settings import Settings

log = logging.getLogger(__name__)

#: Compaction-friendly configs for the catalog topic: roll a segment every 10 s so the
#: cleaner (broker backoff 1 s) can compact closed segments quickly in dev and tests.
CATALOG_CONFIGS = {
    "cleanup.policy": "compact",
    "segment.ms": "10000",
    "min.cleanable.dirty.ratio": "0.01",
    "delete.retention.ms": "1000",
    "min.compaction.lag.ms": "0",
}


#: The alerts topic: compacted (the latest value per burst is its state), but every record
#: stays readable for an hour first, so a reader that keeps up sees each open and retraction;
#: stamped by the broker when appended (an alert's delay is measured from that stamp).
ALERTS_CONFIGS = {
    "cleanup.policy": "compact",
    "min.compaction.lag.ms": "3600000",
    "message.timestamp.type": "LogAppendTime",
}


def topic_specs(settings: Settings) -> dict[str, dict]:
    """The events, catalog and alerts topics as kafka-python ``create_topics`` dict specs."""
    kafka = settings.kafka
    durability = {"min.insync.replicas": str(kafka.min_insync_replicas)}
    return {
        kafka.events_topic: {
            "num_partitions": kafka.events_partitions,
            "replication_factor": kafka.replication_factor,
            "configs": {
                "cleanup.policy": "delete",
                "retention.ms": str(kafka.events_retention_ms),
                "retention.bytes": "-1",
                **durability,
            },
        },
        kafka.catalog_topic: {
            "num_partitions": kafka.catalog_partitions,
            "replication_factor": kafka.replication_factor,
            "configs": {**CATALOG_CONFIGS, **durability},
        },
        kafka.alerts_topic: {
            "num_partitions": 1,
            "replication_factor": kafka.replication_factor,
            "configs": {**ALERTS_CONFIGS, **durability},
        },
    }


@contextmanager
def admin_client(settings: Settings) -> Iterator[KafkaAdminClient]:
    """A KafkaAdminClient on ``settings.kafka.bootstrap_servers``, closed on exit."""
    client = KafkaAdminClient(bootstrap_servers=settings.kafka.bootstrap_servers, client_id="lk")
    try:
        yield client
    finally:
        client.close()


def ensure_topics(settings: Settings) -> list[str]:
    """Create the events, catalog and alerts topics if they are missing.

    Existing topics are left as they are (a partition-count mismatch is logged).

    Returns:
        The names of the topics this call created.
    """
    specs = topic_specs(settings)
    with admin_client(settings) as admin:
        existing = {t["name"]: t for t in admin.describe_topics() if t["name"] in specs}
        for name, topic in existing.items():
            if len(topic["partitions"]) != specs[name]["num_partitions"]:
                log.warning(
                    "topic %s exists with %d partitions, settings ask for %d",
                    name,
                    len(topic["partitions"]),
                    specs[name]["num_partitions"],
                )
        missing = {name: spec for name, spec in specs.items() if name not in existing}
        if not missing:
            return []
        result = admin.create_topics(missing, raise_errors=False)
        created = []
        for topic in result["topics"]:
            error = kafka_errors.for_code(topic["error_code"])
            if error is kafka_errors.TopicAlreadyExistsError:
                continue
            if error is not kafka_errors.NoError:
                raise error(f"creating topic {topic['name']}: {topic.get('error_message')}")
            created.append(topic["name"])
        admin.wait_for_topics(created, timeout_ms=30_000)
    log.info("created topics %s", ", ".join(created))
    return created


def _partitions(consumer: KafkaConsumer, topic: str) -> list[TopicPartition]:
    ids = consumer.partitions_for_topic(topic)
    if not ids:
        raise kafka_errors.UnknownTopicOrPartitionError(f"topic {topic} does not exist")
    return [TopicPartition(topic, p) for p in sorted(ids)]


def _consumer(settings: Settings) -> KafkaConsumer:
    return KafkaConsumer(
        bootstrap_servers=settings.kafka.bootstrap_servers,
        group_id=None,
        enable_auto_commit=False,
        client_id="lk-offsets",
    )


def _read(consumer: KafkaConsumer, topic: str, *, end: bool) -> dict[int, int]:
    tps = _partitions(consumer, topic)
    found = consumer.end_offsets(tps) if end else consumer.beginning_offsets(tps)
    return {tp.partition: found[tp] for tp in tps}


def _offsets(settings: Settings, topic: str, *, end: bool) -> dict[int, int]:
    consumer = _consumer(settings)
    try:
        return _read(consumer, topic, end=end)
    finally:
        consumer.close()


class EndOffsets:
    """The end offsets of one topic, read through one consumer that stays open.

    Opening a consumer (connection, API version probe, metadata) costs about 120 ms
    here and an end-offset request about 2 ms; a lane asks every micro-batch. A
    consumer reconnects by itself after the broker comes back. ``close`` when done.
    """

    def __init__(self, settings: Settings, topic: str) -> None:
        self.settings = settings
        self.topic = topic
        self._consumer: KafkaConsumer | None = None

    def __call__(self) -> dict[int, int]:
        """The next offset to be written per partition (the high watermark), now."""
        if self._consumer is None:
            self._consumer = _consumer(self.settings)
        return _read(self._consumer, self.topic, end=True)

    def close(self) -> None:
        """Close the consumer (the next call opens a new one)."""
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None


def start_offsets(settings: Settings, topic: str) -> dict[int, int]:
    """The first offset still in the log per partition (the log start offset)."""
    return _offsets(settings, topic, end=False)


def end_offsets(settings: Settings, topic: str) -> dict[int, int]:
    """The next offset to be written per partition (the high watermark)."""
    return _offsets(settings, topic, end=True)


def delete_records(settings: Settings, topic: str, offsets: dict[int, int]) -> dict[int, int]:
    """Delete every record below ``offsets[partition]`` (advances the log start offset).

    Returns:
        The new low watermark per partition.
    """
    request = {TopicPartition(topic, p): offset for p, offset in offsets.items()}
    with admin_client(settings) as admin:
        result = admin.delete_records(request)
    return {tp.partition: meta["low_watermark"] for tp, meta in result.items()}
