"""The oracle's read of a topic starts over after a retriable Kafka error, and only then."""

from __future__ import annotations

import pytest
from kafka.errors import KafkaConnectionError, TopicAuthorizationFailedError

import oracle.log
from config.settings import Settings
from oracle.records import RawRecord

pytestmark = pytest.mark.unit
RECORD = RawRecord(0, 0, b"k", b"v")


def _reads(monkeypatch, outcomes: list) -> list[str]:
    """Make each read take the next outcome (raise it, or return it); return the topics read."""
    asked: list[str] = []

    def read(_settings, topic):
        asked.append(topic)
        outcome = outcomes.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    monkeypatch.setattr(oracle.log, "_read", read)
    monkeypatch.setattr(oracle.log.time, "sleep", lambda _s: None)
    return asked


def test_a_node_that_just_died_costs_a_retry_not_the_read(monkeypatch):
    asked = _reads(monkeypatch, [KafkaConnectionError("111 ECONNREFUSED"), [RECORD]])
    assert oracle.log.consume_all(Settings(), "events") == [RECORD]
    assert asked == ["events", "events"]


def test_an_error_that_retrying_cannot_fix_is_raised_at_once(monkeypatch):
    assert not TopicAuthorizationFailedError.retriable
    asked = _reads(monkeypatch, [TopicAuthorizationFailedError(), [RECORD]])
    with pytest.raises(TopicAuthorizationFailedError):
        oracle.log.consume_all(Settings(), "events")
    assert asked == ["events"]


def test_retries_stop_once_patience_runs_out(monkeypatch):
    _reads(monkeypatch, [KafkaConnectionError("down")] * 3)
    with pytest.raises(KafkaConnectionError):
        oracle.log.consume_all(Settings(), "events", patience=0.0)
