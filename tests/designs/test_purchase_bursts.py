"""purchase_bursts on a real broker: bursts split across a batch cutoff and across
micro-batches are found by Lambda (batch + speed) and by a Kappa replay, equal to the oracle."""

from __future__ import annotations

from datetime import timedelta

import pytest

import oracle
from batch_layer.job import run_batch
from config.settings import Settings, with_sections
from designs.kappa import reprocess as kappa
from designs.lambda_arch import run_speed
from oracle import consume_all
from tests.conftest import fresh_topics
from tests.support.bursts import T0, M, purchases
from tests.support.serving import read_served
from tests.support.workload import assert_view_matches
from views.purchase_bursts import VIEW
from views.registry import ViewRegistry
from workload.producer import produce

pytestmark = pytest.mark.integration
REGISTRY = ViewRegistry([VIEW])


def _burst(user: int, minute: float, purchases: int) -> dict:
    at = T0 + minute * M
    return {"user_id": user, "burst_at": at, "window_start": at - 5 * M, "purchases": purchases}


EXPECTED = [
    _burst(1, 4, 3),  # two purchases in the batch run, the third in the speed layer
    _burst(2, 13, 3),  # three micro-batches of the speed layer
    _burst(2, 14, 4),
]


def _expected(settings: Settings, cutoff=None) -> list[dict]:
    events = consume_all(settings, settings.kafka.events_topic)
    joined = {} if cutoff is None else {"batch": {}, "speed": {}}
    return oracle.served_views(events, joined, settings.views, cutoff=cutoff)[VIEW.name]


def test_bursts_across_the_cutoff_and_micro_batches_in_both_designs(spark, kafka_settings):
    settings = with_sections(
        fresh_topics(kafka_settings),
        views={"allowed_lateness": {VIEW.name: timedelta(hours=2)}},
        stream={"replay_max_offsets_per_trigger": 2},
    )
    assert produce(settings, purchases(1, 0, 2)).failed == 0
    batch = run_batch(spark, settings, REGISTRY)
    assert read_served(spark, settings, VIEW.name).count() == 0
    for part in (purchases(1, 4) + purchases(2, 10), purchases(2, 12), purchases(2, 13, 14)):
        assert produce(settings, part).failed == 0
        run_speed(spark, settings, REGISTRY, until_caught_up=True)
    served = read_served(spark, settings, VIEW.name)
    assert_view_matches(served, EXPECTED, VIEW.name)
    assert_view_matches(served, _expected(settings, batch.run.cutoff), VIEW.name)

    replay = with_sections(settings, storage={"root": f"{settings.storage.root}/kappa"})
    replay = replay.model_copy(update={"mode": "kappa"})
    assert kappa.reprocess(spark, replay, REGISTRY).version == 1
    replayed = read_served(spark, replay, VIEW.name)
    assert_view_matches(replayed, EXPECTED, VIEW.name)
    assert_view_matches(replayed, _expected(replay), VIEW.name)
