from __future__ import annotations

import logging
import socket
import subprocess
from pathlib import Path

import pytest
from kafka import KafkaProducer

from config.settings import Settings, with_sections
from event_log import topics
from infra import kafka_broker
from infra.kafka_broker import BrokerError
from infra.local import free_ports

pytestmark = pytest.mark.integration


def _isolated(base: Settings, home: Path, port: int | None = None) -> Settings:
    """A settings copy for a second broker: own home and ports."""
    fresh, controller = free_ports(2)
    port = port or fresh
    return with_sections(
        base,
        broker={"home": home, "port": port, "controller_port": controller, "start_timeout_s": 60},
        kafka={"bootstrap_servers": f"127.0.0.1:{port}"},
    )


def test_up_is_idempotent(kafka_settings: Settings) -> None:
    first = kafka_broker.status(kafka_settings)
    second = kafka_broker.up(kafka_settings)
    assert first.running and second.running
    assert second.pid == first.pid
    assert second.bootstrap == kafka_settings.kafka.bootstrap_servers


def test_status_lists_topics_with_layout_and_retention(topic_settings: Settings) -> None:
    kafka = topic_settings.kafka
    assert topics.ensure_topics(topic_settings) == []  # already created by the fixture

    current = kafka_broker.status(topic_settings)
    events = current.topic(kafka.events_topic)
    catalog = current.topic(kafka.catalog_topic)
    assert events is not None and catalog is not None
    assert events.partitions == kafka.events_partitions
    assert events.retention_ms == str(kafka.events_retention_ms) == "-1"
    assert events.cleanup_policy == "delete"
    assert catalog.partitions == kafka.catalog_partitions
    assert catalog.cleanup_policy == "compact"
    assert events.end_offsets == dict.fromkeys(range(kafka.events_partitions), 0)


def test_offsets_and_delete_records(topic_settings: Settings) -> None:
    topic = topic_settings.kafka.events_topic
    producer = KafkaProducer(bootstrap_servers=topic_settings.kafka.bootstrap_servers)
    for i in range(10):
        producer.send(topic, key=b"k", value=str(i).encode(), partition=1)
    producer.flush()
    producer.close()

    assert topics.end_offsets(topic_settings, topic)[1] == 10
    assert topics.delete_records(topic_settings, topic, {1: 4}) == {1: 4}
    assert topics.start_offsets(topic_settings, topic) == {0: 0, 1: 4, 2: 0, 3: 0}
    status = kafka_broker.status(topic_settings).topic(topic)
    assert status is not None
    assert (status.start_offsets[1], status.end_offsets[1]) == (4, 10)


def test_stale_pid_file_is_cleaned_up_and_a_fresh_broker_starts(
    base_settings: Settings, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    settings = _isolated(base_settings, tmp_path / "kafka")
    dead = subprocess.Popen(["true"])
    dead.wait()
    pid_file = tmp_path / "kafka" / "broker.pid"
    pid_file.parent.mkdir(parents=True)
    pid_file.write_text(f"{dead.pid}\n")

    caplog.set_level(logging.WARNING, logger="infra.kafka_broker")
    try:
        started = kafka_broker.up(settings)
        assert "stale PID file" in caplog.text
        assert started.running and started.pid != dead.pid
        assert pid_file.read_text().strip() == str(started.pid)
    finally:
        stopped = kafka_broker.down(settings)
    assert stopped
    assert not pid_file.exists()
    assert not kafka_broker.status(settings).running
    assert kafka_broker.down(settings) is False  # fine when not running


def test_port_in_use_is_a_clear_error(base_settings: Settings, tmp_path: Path) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        settings = _isolated(base_settings, tmp_path / "kafka", port=port)
        with pytest.raises(BrokerError, match=rf"port {port} on 127\.0\.0\.1 is in use by another"):
            kafka_broker.up(settings)
    assert not (tmp_path / "kafka" / "broker.pid").exists()
