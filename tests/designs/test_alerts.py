"""The alerts topic on a real broker: every burst alerted exactly once, read as a reader reads it
(``read_committed``), across a publisher SIGKILLed mid-transaction, a Lambda batch correction
that withdraws a burst, and Kappa replays."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from config.settings import Settings, with_sections
from designs.kappa.reprocess import reprocess
from designs.lambda_arch.epochs import run_speed
from designs.lambda_arch.source import lambda_source
from designs.platform import build
from event_log.topics import ensure_topics
from lake.pools import DEFAULT, LIVE, POOL, in_pool
from lake.tables import Tables
from serving_layer.alerts import LanePublisher, Published, publish_served
from tests.conftest import fresh_topics
from tests.support.bursts import purchases
from tests.support.kafka import alert_records
from tests.support.pools import last_stage, stage_pools
from views.purchase_bursts import VIEW
from views.registry import ViewRegistry
from workload.producer import produce

pytestmark = pytest.mark.integration
REPO = Path(__file__).resolve().parents[2]
REGISTRY = ViewRegistry([VIEW])

# user 1: purchases at minutes 0 and 2 (the batch run), 4 (the speed layer): a burst of 3
# at 10:04. User 2: four purchases at 10:10 (one interval end): a burst of 4.
USER_1 = "1:2026-11-01T10:04:00.000Z"
USER_2 = "2:2026-11-01T10:10:00.000Z"


def _open(key: str, purchases: int) -> tuple[str, dict]:
    user, at = key.split(":", 1)
    return key, {"user_id": int(user), "burst_at": at, "purchases": purchases, "status": "open"}


def _retracted(key: str, purchases: int) -> tuple[str, dict]:
    key, value = _open(key, purchases)
    return key, {**value, "status": "retracted"}


def _lane_publisher(spark: SparkSession, settings: Settings) -> LanePublisher:
    """A Lambda lane's publisher of the bursts view, as ``lk speed`` builds it."""
    tables = Tables.of(settings)
    return LanePublisher(
        spark,
        settings,
        REGISTRY,
        "lambda",
        lambda s: lambda_source(s, tables, REGISTRY),
        settings.views.lateness(VIEW.name),
    )


KILLED = """
import os, signal
from config.settings import load_settings
from serving_layer.alerts import Alert, publish

alerts = [Alert(1, "2026-11-01T10:04:00.000Z", 3), Alert(2, "2026-11-01T10:10:00.000Z", 4)]
publish(
    load_settings(),
    "lambda",
    lambda: {a.key: a for a in alerts},
    before_commit=lambda: os.kill(os.getpid(), signal.SIGKILL),
)
"""


def _publish_and_die(settings: Settings, cwd: Path) -> None:
    """A publisher in a process of its own, SIGKILLed with its transaction sent, not committed."""
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "LK_KAFKA__BOOTSTRAP_SERVERS": settings.kafka.bootstrap_servers,
        "LK_KAFKA__ALERTS_TOPIC": settings.kafka.alerts_topic,
    }
    env.pop("LK_CONFIG", None)
    done = subprocess.run([sys.executable, "-c", KILLED], env=env, cwd=cwd, timeout=120)
    assert done.returncode == -9


def test_each_burst_is_alerted_once_across_a_kill_a_correction_and_replays(
    spark, kafka_settings, tmp_path
):
    settings = with_sections(
        fresh_topics(kafka_settings),
        views={"allowed_lateness": {VIEW.name: timedelta(hours=2)}},
        stream={"replay_max_offsets_per_trigger": 2},
    )
    lam = build(settings, REGISTRY)
    assert produce(settings, purchases(1, 0, 2)).failed == 0
    lam.build_history(spark)  # a batch run: no burst yet, nothing published
    assert alert_records(settings) == []

    assert produce(settings, purchases(1, 4) + purchases(2, 10, 10, 10, 10)).failed == 0
    _publish_and_die(settings, tmp_path)
    assert len(alert_records(settings, committed=False)) == 2  # sent ...
    assert alert_records(settings) == []  # ... never visible

    lam.run_streaming(spark, until_caught_up=True)  # publishes when it stops
    told = [_open(USER_1, 3), _open(USER_2, 4)]
    assert alert_records(settings) == told
    assert lam.publish_alerts(spark) is not None
    assert alert_records(settings) == told  # publishing again adds nothing

    # the batch correction: 4 purchases make a burst now; user 1's 3 no longer do
    corrected = with_sections(settings, views={"burst_threshold": 4})
    build(corrected, REGISTRY).serve_new_logic(spark)  # batch run, then the lane rebases
    assert alert_records(settings) == [*told, _retracted(USER_1, 3)]

    # Kappa, with an alerts topic of its own: a version publishes only once it serves
    kappa = with_sections(
        settings,
        storage={"root": f"{settings.storage.root}/kappa"},
        kafka={"alerts_topic": f"{settings.kafka.alerts_topic}_kappa"},
    ).model_copy(update={"mode": "kappa"})
    ensure_topics(kappa)
    kap = build(kappa, REGISTRY)
    seen_before_switch: list[list] = []

    def before_switch(version: int) -> None:
        seen_before_switch.append(alert_records(kappa))

    reprocess(spark, kappa, REGISTRY, before_switch=before_switch)  # v1 from offset 0
    told = [_open(USER_1, 3), _open(USER_2, 4)]
    assert alert_records(kappa) == told
    reprocess(spark, kappa, REGISTRY, before_switch=before_switch)  # v2: the same log again
    kap.run_streaming(spark, until_caught_up=True)
    assert alert_records(kappa) == told  # no duplicate
    reprocess(spark, with_sections(kappa, views={"burst_threshold": 4}), REGISTRY)  # v3
    assert alert_records(kappa) == [*told, _retracted(USER_1, 3)]
    assert seen_before_switch == [[], told]


def test_a_lane_publishes_what_its_commits_could_change_and_starts_over_when_fenced(
    spark, kafka_settings
):
    """The lane's publisher reads the whole topic and every burst once, then only the
    bursts its commits can have changed (a bound), until another publisher fences it."""
    settings = fresh_topics(kafka_settings)
    publisher = _lane_publisher(spark, settings)

    def lane_with(*records: list) -> None:
        assert produce(settings, [r for batch in records for r in batch]).failed == 0
        run_speed(spark, settings, REGISTRY, until_caught_up=True)

    try:
        lane_with(purchases(1, 0, 2, 4), purchases(3, 0))
        assert publisher() == Published(1, 0)
        assert alert_records(settings) == [_open(USER_1, 3)]
        assert publisher.widest == timedelta(minutes=5)  # the window every purchase has

        # one more purchase of user 1 (a burst of 4 at 10:05), and user 2's burst
        lane_with(purchases(1, 5), purchases(2, 10, 10, 10, 10), purchases(3, 10))
        assert publisher() == Published(2, 0)
        assert publisher() == Published(0, 0)  # nothing new: nothing sent
        user_1_later = "1:2026-11-01T10:05:00.000Z"
        told = [_open(USER_1, 3), _open(user_1_later, 4), _open(USER_2, 4)]
        assert alert_records(settings) == told
        assert (publisher.whole, publisher.bounded) == (1, 2)  # the first one whole

        # a whole publish of the same design (a batch run's) fences the lane's producer
        lam = lambda s: lambda_source(s, Tables.of(settings), REGISTRY)  # noqa: E731
        assert publish_served(spark, settings, REGISTRY, "lambda", lam) == Published(0, 0)
        user_3 = "3:2026-11-01T10:12:00.000Z"
        lane_with(purchases(3, 11, 12))
        assert publisher() is None  # refused: it was fenced, and says so
        assert publisher() == Published(1, 0)  # and starts over: a whole publish
        assert (publisher.whole, publisher.bounded) == (2, 2)
        assert alert_records(settings) == [*told, _open(user_3, 3)]
    finally:
        publisher.close()


def test_a_lanes_alerts_run_behind_its_micro_batches_in_the_default_pool(spark, kafka_settings):
    """The lane's thread submits to the live pool; its publisher's reads go to ``default``."""
    settings = fresh_topics(kafka_settings)
    publisher = _lane_publisher(spark, settings)
    assert produce(settings, purchases(1, 0, 2, 4)).failed == 0
    run_speed(spark, settings, REGISTRY, until_caught_up=True)
    try:
        with in_pool(spark, LIVE):
            marker = last_stage(spark)
            assert publisher() == Published(1, 0)
            assert spark.sparkContext.getLocalProperty(POOL) == LIVE  # the thread's, kept
        assert stage_pools(spark, marker) == {DEFAULT}
    finally:
        publisher.close()
