"""The entry point turns an absent broker into one line that says what to check."""

from __future__ import annotations

import pytest
from kafka.errors import KafkaTimeoutError

from lk.cli import app as cli

pytestmark = pytest.mark.unit


def _failing(error: BaseException):
    def run() -> None:
        raise error

    return run


def test_kafka_out_of_reach_is_a_message_and_exit_1(monkeypatch, capsys) -> None:
    monkeypatch.setattr(cli, "app", _failing(KafkaTimeoutError("Unable to bootstrap from x:1")))
    with pytest.raises(SystemExit) as exit_:
        cli.main()
    assert exit_.value.code == 1
    said = " ".join(capsys.readouterr().err.split())
    assert said.startswith("Kafka out of reach: KafkaTimeoutError: Unable to bootstrap from x:1.")
    assert "LK_KAFKA__BOOTSTRAP_SERVERS" in said


def test_any_other_failure_is_left_as_it_was(monkeypatch) -> None:
    monkeypatch.setattr(cli, "app", _failing(ValueError("a bug")))
    with pytest.raises(ValueError, match="a bug"):
        cli.main()
