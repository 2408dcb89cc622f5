"""A log whose partitions diverge by hours in Kafka time, with re-sends hours after their originals.

A producer that was down and caught up, or a hot key, writes one partition in a burst
while the others were written over hours; Spark's Kafka source splits a micro-batch's
offsets across partitions by backlog, not by time. Every design must still serve the
oracle's views, and count each re-send once however late it comes (``docs/semantics.md``,
"Duplicates"); a de-duplication watermark, when one is configured, must drop nothing
without counting it, and a Kappa replay that dropped something must not switch.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from datetime import timedelta

import pytest
from kafka import KafkaProducer
from typer.testing import CliRunner

import oracle
from batch_layer.job import run_batch
from config.settings import Settings, with_sections
from designs.kappa import reprocess as kappa
from designs.kappa.versions import lane_name
from designs.lambda_arch import LAMBDA_LANE, run_speed
from designs.platform import build
from designs.status import lane_status
from lk.cli.app import app
from oracle import consume_all
from tests.conftest import fresh_topics
from tests.support.env import lk_env
from tests.support.expected import assert_served_per_contract
from tests.support.serving import source_of
from workload.generator import Record, WorkloadSpec, generate
from workload.producer import partition_for, produce, producer_config

pytestmark = pytest.mark.integration
SPEC = WorkloadSpec(events=3_000, users=60, products=30, seed=30, duplicate_fraction=0.0)
HOUR_MS = 3_600_000
BURST_MS = 5 * 60_000  # partition 0: the last five minutes
RESENDS = 40  # events of the other partitions sent again two hours after their original
CAP = 1_000  # offsets per micro-batch: several micro-batches, each across every partition


def _skewed(settings: Settings, events: Sequence[Record], now_ms: int) -> list[tuple]:
    """``(kafka time, partition, record)`` in send order: partition 0 in a late burst."""
    partitions = settings.kafka.events_partitions
    placed = [(partition_for(r.key, partitions), r) for r in events]
    hot = [r for p, r in placed if p == 0]
    rest = [(p, r) for p, r in placed if p != 0]
    timed = [
        (now_ms - BURST_MS + i * BURST_MS // max(len(hot), 1), 0, r) for i, r in enumerate(hot)
    ]
    span = 3 * HOUR_MS - BURST_MS
    timed += [
        (now_ms - 3 * HOUR_MS + i * span // max(len(rest), 1), p, r)
        for i, (p, r) in enumerate(rest)
    ]
    first_hour = [t for t in timed if t[1] != 0 and t[0] < now_ms - 2 * HOUR_MS]
    resent = [(ts + 2 * HOUR_MS, p, r) for ts, p, r in first_hour[:: len(first_hour) // RESENDS]]
    return sorted(timed + resent[:RESENDS], key=lambda t: t[0])


def _send(settings: Settings, timed: Sequence[tuple]) -> None:
    """Send each record to its partition with its own Kafka timestamp; require every ack."""
    producer = KafkaProducer(**producer_config(settings))
    try:
        futures = [
            producer.send(
                settings.kafka.events_topic, key=r.key, value=r.value, partition=p, timestamp_ms=ts
            )
            for ts, p, r in timed
        ]
        producer.flush()
        for future in futures:
            future.get(timeout=30)
    finally:
        producer.close()


def skewed_log(kafka_settings: Settings, **stream: object) -> tuple[Settings, list[tuple]]:
    """Fresh topics holding the catalog and the skewed events log; the events as sent."""
    settings = with_sections(fresh_topics(kafka_settings), stream=stream)
    records = list(generate(SPEC))
    report = produce(settings, [r for r in records if r.topic == "catalog"])
    assert report.failed == 0
    timed = _skewed(settings, [r for r in records if r.topic == "events"], int(time.time() * 1000))
    _send(settings, timed)
    return settings, timed


def duplicates_in_log(settings: Settings) -> int:
    """Valid records whose event id an earlier offset already carried (the oracle's rule)."""
    valid, _ = oracle.decode(consume_all(settings, settings.kafka.events_topic))
    return len(valid) - len({e.event_id for e in valid})


def test_kappa_replays_a_skewed_log_to_the_oracle_and_counts_each_resend_once(
    spark, kafka_settings
):
    settings, _ = skewed_log(kafka_settings, replay_max_offsets_per_trigger=CAP)
    settings = settings.model_copy(update={"mode": "kappa"})
    result = kappa.reprocess(spark, settings, build(settings).registry)
    assert source_of(spark, settings).description == f"kappa v{result.version}"
    assert_served_per_contract(spark, settings, lane_name(result.version))

    status = lane_status(spark, settings, lane_name(result.version))
    assert status["micro_batches"] >= 3, "the cap split the replay into several micro-batches"
    assert status["duplicates"] == duplicates_in_log(settings) == RESENDS
    assert status["read_rows"] == status["input_rows"] + RESENDS
    assert status["watermark_drops"] == 0


# make scenarios, not CI: a Lambda lane catching up over a skewed log (85 s)
@pytest.mark.scenario
def test_a_catching_up_lambda_lane_serves_the_oracle_before_and_after_the_batch_run(
    spark, kafka_settings, monkeypatch
):
    settings, timed = skewed_log(kafka_settings, max_offsets_per_trigger=CAP)
    run_speed(spark, settings, build(settings).registry, until_caught_up=True)
    assert_served_per_contract(spark, settings, LAMBDA_LANE)
    before = lane_status(spark, settings, LAMBDA_LANE)
    assert before["micro_batches"] >= 3
    assert before["duplicates"] == duplicates_in_log(settings) == RESENDS

    batch = run_batch(spark, settings, build(settings).registry)
    # after the cutoff: re-sends of events below it, which only the lane can recognise
    again = [(ts + 1, p, r) for ts, p, r in timed[:: len(timed) // 25]][:25]
    _send(settings, again)
    run_speed(spark, settings, build(settings).registry, until_caught_up=True)
    assert source_of(spark, settings).description.startswith(f"batch run {batch.run.run_id}")
    assert_served_per_contract(spark, settings, LAMBDA_LANE, cutoff=batch.run.cutoff)
    after = lane_status(spark, settings, LAMBDA_LANE)
    assert after["duplicates"] == duplicates_in_log(settings) == RESENDS + 25
    assert after["watermark_drops"] == 0

    # and as lk status prints it
    for key, value in lk_env(settings, COLUMNS="200").items():
        monkeypatch.setenv(key, value)
    shown = CliRunner().invoke(app, ["status"])
    assert shown.exit_code == 0, shown.output
    assert re.search(rf"re-sends dropped\s+│\s+{RESENDS + 25}\s", shown.output), shown.output
    assert "dedup watermark" not in shown.output


def test_a_dedup_watermark_counts_what_it_drops_and_kappa_refuses_the_version(
    spark, kafka_settings
):
    horizon = timedelta(minutes=10)
    settings, _ = skewed_log(
        kafka_settings, replay_max_offsets_per_trigger=CAP, dedup_horizon=horizon
    )
    settings = settings.model_copy(update={"mode": "kappa"})
    with pytest.raises(kappa.DroppedEventsError, match=r"dropped \d+ records behind"):
        kappa.reprocess(spark, settings, build(settings).registry)
    status = lane_status(spark, settings, lane_name(1))
    dropped = status["watermark_drops"]
    assert dropped > 0
    events = consume_all(settings, settings.kafka.events_topic)
    assert status["read_rows"] == len(events), "every offset was read"
    assert status["input_rows"] + dropped <= len(events)
    assert status["duplicates"] >= 0
