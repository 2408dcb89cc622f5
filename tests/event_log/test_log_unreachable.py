"""Which Kafka failures mean "the log is away, try again" and which mean "data is gone"."""

from __future__ import annotations

import pytest
from kafka.errors import KafkaTimeoutError, OffsetOutOfRangeError

from event_log.kafka_source import log_unreachable

pytestmark = pytest.mark.unit

#: As Spark's query failure reads after the broker went away (seen in the chaos pass).
SPARK_TIMEOUT = (
    "[STREAM_FAILED] Query [id = 1, runId = 2] terminated with exception: "
    "org.apache.kafka.common.errors.TimeoutException: Timed out waiting for a node assignment."
)
SPARK_DATA_LOSS = (
    "[STREAM_FAILED] Query [id = 1, runId = 2] terminated with exception: Job aborted: "
    "org.apache.kafka.clients.consumer.OffsetOutOfRangeException: Some data may have been lost"
)


def test_a_broker_out_of_reach_is_worth_a_restart() -> None:
    assert log_unreachable(RuntimeError(SPARK_TIMEOUT))
    assert log_unreachable(KafkaTimeoutError("Unable to bootstrap from 127.0.0.1:9092"))


def test_lost_offsets_and_other_failures_are_not() -> None:
    assert not log_unreachable(RuntimeError(SPARK_DATA_LOSS))
    assert not log_unreachable(OffsetOutOfRangeError("offset 12 is gone"))
    assert not log_unreachable(ValueError("a view's compute raised"))
