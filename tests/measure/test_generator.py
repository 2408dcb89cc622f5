"""The steady generator against the real broker: its own process, its schedule, its probes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from config.settings import Settings
from measure.generator import SteadyGenerator, SteadyPlan
from measure.live import PROBE_BASE
from oracle import consume_all, decode

pytestmark = pytest.mark.integration


def test_sends_on_schedule_from_its_own_process(topic_settings: Settings, tmp_path: Path) -> None:
    import os

    plan = SteadyPlan(
        topic_settings.kafka.bootstrap_servers,
        topic_settings.kafka.events_topic,
        rate=200,
        seconds=3,
        source_args={"seed": 3, "probe_every": 10, "late_fraction": 0.0, "malformed_fraction": 0.0},
    )
    with SteadyGenerator(plan, tmp_path) as generator:
        assert generator.pid != os.getpid()
        report = generator.wait()
    assert (report.sent, report.acked, report.failed) == (600, 600, 0)
    assert report.valid and report.schedule_lag["n"] == 600
    assert report.schedule_lag["p99"] < plan.max_schedule_lag_s
    assert report.seconds == pytest.approx(3, abs=1.0)
    # every 10th record is a probe; each acknowledged after it was due
    assert len(report.probes) == 60
    assert all(p["acked"] >= p["due"] for p in report.probes)
    logged = consume_all(topic_settings, topic_settings.kafka.events_topic)
    assert len(logged) == 600
    events, bad = decode(logged)
    assert not bad
    probes = {e.user_id for e in events if e.user_id >= PROBE_BASE}
    assert probes == {int(p["id"]) for p in report.probes}
    # the report crosses processes as JSON
    assert json.loads(json.dumps(report.as_dict()))["valid"] is True
