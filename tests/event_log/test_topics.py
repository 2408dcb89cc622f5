"""A topic's end offsets through one consumer kept open, on the real broker."""

from __future__ import annotations

import pytest
from kafka import KafkaProducer

from event_log.topics import EndOffsets, end_offsets
from tests.conftest import fresh_topics

pytestmark = pytest.mark.integration


def test_one_consumer_follows_the_topic_and_can_be_closed_and_reopened(kafka_settings):
    settings = fresh_topics(kafka_settings)
    topic = settings.kafka.catalog_topic
    ends = EndOffsets(settings, topic)
    try:
        assert ends() == end_offsets(settings, topic) == {0: 0}

        producer = KafkaProducer(bootstrap_servers=settings.kafka.bootstrap_servers)
        for i in range(3):
            producer.send(topic, key=b"sku-%d" % i, value=b"{}", partition=0)
        producer.flush()
        producer.close()

        assert ends() == {0: 3}, "the same consumer sees the new records"
        ends.close()
        assert ends() == {0: 3} == end_offsets(settings, topic), "a closed one reopens"
    finally:
        ends.close()
