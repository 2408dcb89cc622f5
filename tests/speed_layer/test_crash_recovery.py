"""Exactly-once: SIGKILL the speed layer mid-run, restart it; the views still equal the oracle
and every malformed record is in the quarantine exactly once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import pytest
from pyspark.sql import Row
from pyspark.testing import assertDataFrameEqual

import oracle
from batch_layer.job import run_batch
from config.settings import with_sections
from designs.lambda_arch import LAMBDA_LANE, run_speed
from designs.platform import build
from lake.tables import Tables
from oracle import consume_all
from speed_layer import lane_log
from speed_layer.lane import find_lane
from tests.conftest import REPO
from tests.support.env import lk_env
from tests.support.expected import assert_served_per_contract
from tests.support.kafka import alert_records, produce_spec
from workload.generator import WorkloadSpec, generate
from workload.producer import produce

pytestmark = pytest.mark.integration
SPEC = WorkloadSpec(events=2_500, users=60, products=30, seed=33)


def _env(settings) -> dict[str, str]:
    return {
        **os.environ,
        **lk_env(
            settings,
            LK_STREAM__MAX_OFFSETS_PER_TRIGGER="500",
            LK_STREAM__COMPACT_EVERY="3",
            LK_KAFKA__ALERTS_EVERY="0 seconds",  # alerts published after every commit
        ),
    }


def _committed_batches(settings) -> int:
    """Micro-batches Spark has committed (``commits/N``): the next one is number this."""
    commits = Path(
        Tables.of(settings).path("lambda", "speed", "checkpoint", "commits").removeprefix("file:")
    )
    return len([p for p in commits.glob("*") if p.name.isdigit()]) if commits.exists() else 0


def _start_speed(settings) -> subprocess.Popen:
    """``lk speed`` in a process group of its own (so SIGKILL takes its JVM too)."""
    return subprocess.Popen(
        [sys.executable, "-m", "lk.cli.app", "speed"],
        cwd=REPO,
        env=_env(settings),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )


def _restart_settings(settings):
    return with_sections(settings, stream={"max_offsets_per_trigger": 500, "compact_every": 3})


def test_sigkill_mid_run_then_restart_loses_and_duplicates_nothing(spark, topic_settings):
    settings = topic_settings
    produce_spec(settings, SPEC)
    speed = _start_speed(settings)
    try:
        deadline = time.monotonic() + 300
        while _committed_batches(settings) < 2 and time.monotonic() < deadline:
            assert speed.poll() is None, "the speed layer exited early"
            time.sleep(0.5)
        assert _committed_batches(settings) >= 2, "the speed layer made no progress"
        lane_root = Path(Tables.of(settings).path("lambda", "speed").removeprefix("file:"))
        started = lane_root / "_batches" / f"{_committed_batches(settings)}.json"
        while not started.exists() and time.monotonic() < deadline:
            time.sleep(0.05)  # until the next micro-batch has begun writing
        time.sleep(0.5)
    finally:
        os.killpg(speed.pid, signal.SIGKILL)
        speed.wait()
    killed_at = _committed_batches(settings)

    killed_told = alert_records(settings)
    # the design's streaming run, as lk speed runs it: it publishes alerts when it stops
    build(_restart_settings(settings)).run_streaming(spark, until_caught_up=True)
    assert _committed_batches(settings) > killed_at
    meta = json.loads((lane_root / "_lane.json").read_text())
    assert meta["recoveries"] == 1, "the killed micro-batch was undone and planned again"

    events = consume_all(settings, settings.kafka.events_topic)
    _, malformed = oracle.decode(events)
    lane = find_lane(spark, Tables.of(settings), LAMBDA_LANE)
    quarantined = lane_log.read(spark, lane, lane_log.QUARANTINE).select(
        "partition", "offset", "reason"
    )
    assert malformed, "the workload has malformed records"
    assertDataFrameEqual(
        quarantined,
        [
            Row(partition=q.record.partition, offset=q.record.offset, reason=q.reason)
            for q in malformed
        ],
    )
    # each with its raw bytes: only malformed records carry them through the lane
    assertDataFrameEqual(
        lane_log.read(spark, lane, lane_log.QUARANTINE).select("partition", "offset", "value"),
        [
            Row(partition=q.record.partition, offset=q.record.offset, value=q.record.value)
            for q in malformed
        ],
    )
    assert_served_per_contract(spark, settings, LAMBDA_LANE)

    # every burst served (the view itself checked against the oracle above) alerted once,
    # whether the killed process or the restarted one published it
    bursts = build(settings).read(spark, "purchase_bursts").select("user_id", "burst_at")
    served = {(r.user_id, r.burst_at) for r in bursts.collect()}
    told = alert_records(settings)
    assert served, "the workload has purchase bursts"
    keys = [key for key, _ in told]
    assert len(keys) == len(set(keys)), "a burst alerted twice"
    assert {(v["user_id"], _when(v["burst_at"])) for _, v in told} == served
    assert all(v["status"] == "open" for _, v in told)
    assert told[: len(killed_told)] == killed_told, "what the killed process published stands"


def _when(iso: str) -> datetime:
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).replace(tzinfo=None)


# make scenarios, not CI: a SIGKILL in a lane's very first micro-batch (80 s)
@pytest.mark.scenario
def test_sigkill_in_the_first_micro_batch_of_a_lane_then_restart(spark, topic_settings):
    """Killed once its first micro-batch has written state, before Spark committed it."""
    settings = topic_settings
    records = list(generate(SPEC))
    split = int(len(records) * 0.6)
    produce(settings, records[:split])
    batch = run_batch(spark, settings, build(settings).registry).run
    catalog = oracle.catalog_state(consume_all(settings, settings.kafka.catalog_topic))
    produce(settings, records[split:])
    checkpoint = Path(
        Tables.of(settings).path("lambda", "speed", "checkpoint").removeprefix("file:")
    )
    speed = _start_speed(settings)
    try:
        deadline = time.monotonic() + 300
        while not any(p.is_file() for p in checkpoint.glob("state/**/*")):
            assert speed.poll() is None, "the speed layer exited early"
            assert time.monotonic() < deadline, "the first micro-batch wrote no state"
            time.sleep(0.05)
    finally:
        os.killpg(speed.pid, signal.SIGKILL)
        speed.wait()
    assert not list(checkpoint.glob("commits/*")), "killed inside the first micro-batch"

    run_speed(spark, _restart_settings(settings), build(settings).registry, until_caught_up=True)
    assert list(checkpoint.glob("commits/*")), "the lane restarted and committed"
    assert_served_per_contract(
        spark, settings, LAMBDA_LANE, cutoff=batch.cutoff, batch_catalog=catalog
    )
