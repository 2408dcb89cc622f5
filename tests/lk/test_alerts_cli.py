"""``lk alerts`` on the real broker: the latest alert per burst, or every record."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from lk.cli.app import app
from serving_layer.alerts import Alert, Published, publish

pytestmark = pytest.mark.integration
A = Alert(1, "2026-11-01T10:04:00.000Z", 3)
B = Alert(2, "2026-11-01T10:10:00.000Z", 4)


def test_lk_alerts_prints_what_the_topic_says_now_and_its_history(
    topic_settings, monkeypatch, tmp_path
):
    assert publish(topic_settings, "lambda", lambda: {A.key: A, B.key: B}) == Published(2, 0)
    assert publish(topic_settings, "lambda", lambda: {B.key: B}) == Published(0, 1)
    monkeypatch.delenv("LK_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)  # no lk.yaml here
    monkeypatch.setenv("LK_KAFKA__BOOTSTRAP_SERVERS", topic_settings.kafka.bootstrap_servers)
    monkeypatch.setenv("LK_KAFKA__ALERTS_TOPIC", topic_settings.kafka.alerts_topic)
    now = CliRunner().invoke(app, ["alerts", "--json"])
    assert now.exit_code == 0, now.output
    a = {"user_id": 1, "burst_at": "2026-11-01T10:04:00.000Z", "purchases": 3, "status": "open"}
    b = {"user_id": 2, "burst_at": "2026-11-01T10:10:00.000Z", "purchases": 4, "status": "open"}
    assert json.loads(now.output) == [{**a, "status": "retracted"}, b]
    history = CliRunner().invoke(app, ["alerts", "--history", "--json"])
    assert json.loads(history.output) == [a, b, {**a, "status": "retracted"}]
