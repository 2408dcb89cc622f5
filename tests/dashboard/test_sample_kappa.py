"""A reading of Kappa during a reprocess: both versions' lanes, then the switch as a mark."""

from __future__ import annotations

from datetime import timedelta

import pytest

from config.settings import with_sections
from dashboard.sample import Sampler
from designs.kappa import reprocess as kappa
from designs.platform import build
from tests.conftest import fresh_topics
from tests.support.kafka import produce_spec
from workload.generator import WorkloadSpec

pytestmark = [pytest.mark.integration, pytest.mark.scenario]  # minutes: make scenarios


def test_each_version_has_its_lane_and_the_switch_is_a_mark(spark, kafka_settings) -> None:
    settings = with_sections(
        fresh_topics(kafka_settings),
        stream={"max_offsets_per_trigger": 1_000, "replay_max_offsets_per_trigger": 1_000},
    ).model_copy(update={"mode": "kappa"})
    produce_spec(settings, WorkloadSpec(events=1_500, users=30, products=10, seed=8))
    kappa.reprocess(spark, settings, build(settings).registry)
    first = Sampler("kappa", settings).read(spark, "revenue_by_category")
    assert first["serving"]["version"] == 1
    assert [(lane["version"], lane["serving"]) for lane in first["lanes"]] == [(1, True)]
    assert [m["label"] for m in first["marks"] if m["kind"] == "switch"] == ["publish: v1 serves"]
    assert first["lanes"][0]["total_lag"] == 0  # v1 replayed the whole log
    assert first["view"]["rows"], "the serving version's rows"

    window = settings.views.model_copy(update={"tumbling_window": timedelta(minutes=5)})
    changed = settings.model_copy(update={"views": window})
    during = []
    kappa.reprocess(
        spark,
        changed,
        build(changed).registry,
        before_switch=lambda version: during.append(Sampler("kappa", changed).read(spark)),
    )
    (replaying,) = during
    assert replaying["serving"]["version"] == 1  # v1 serves while v2 catches up
    lanes = {lane["version"]: lane for lane in replaying["lanes"]}
    assert set(lanes) == {1, 2} and lanes[1]["serving"] and not lanes[2]["serving"]
    assert lanes[2]["micro_batches"], "v2's replay, micro-batch by micro-batch"
    after = Sampler("kappa", changed).read(spark)
    assert after["serving"]["version"] == 2
    switches = [m["label"] for m in after["marks"] if m["kind"] == "switch"]
    assert switches[-1].endswith("v2 serves") and len(switches) == 2
