"""A join's context part: each compaction keeps only what the join can still meet, and a log
written before lanes kept one is seeded from what it retained."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

import pytest
from pyspark.sql import Row
from pyspark.sql import functions as F
from pyspark.testing import assertDataFrameEqual

from batch_layer.job import run_batch
from config.settings import with_sections
from designs.lambda_arch import LAMBDA_LANE, run_speed
from designs.platform import build
from lake import storage
from lake.tables import Tables
from speed_layer import lane_log, progress
from speed_layer.epoch import Epoch
from speed_layer.join_context import ContextPart, rule_of
from speed_layer.lane import find_lane, open_lane
from speed_layer.maintenance import compact, contexts
from tests.support.expected import assert_served_per_contract
from tests.support.kafka import event_record, produce_spec, small_spec
from tests.support.serving import read_served
from tests.views.conftest import T0, make_events
from views import conversions
from views.registry import ViewRegistry
from workload.generator import Record, WorkloadSpec, generate
from workload.producer import produce

pytestmark = pytest.mark.integration
EPOCH = Epoch(id="kappa", cutoff={}, base=lambda view: None, keeps_history=False)
REGISTRY = ViewRegistry([conversions.VIEW])
H, M = timedelta(hours=1), timedelta(minutes=1)
SPAN = timedelta(minutes=20)  # of each generated spec
CLOCK = T0 + 3 * H  # lateness 10 min: the watermark at 2 h 50; keep-back 75 min: 1 h 45
PART = lane_log.context_part("conversions", seeded_by=1)


def _micro_batch(spark, lane, rows: list[tuple], late: bool = False, part: str = PART) -> None:
    """Retained rows of one micro-batch into a context part, as a lane appends them."""
    frame = make_events(spark, rows).select(
        "*",
        F.array(*([F.lit("conversions")] if late else [])).cast("array<string>").alias("late_for"),
        F.lit(1).cast("long").alias("batch_id"),
    )
    lane_log.commit(spark, lane, [lane_log.context_rows(part, frame)])


def _parts(spark, lane) -> list[str]:
    """The context parts the log holds rows of."""
    log = spark.read.format("delta").load(lane.log)
    found = log.where(F.col(lane_log.PART).startswith("context")).select(lane_log.PART)
    return sorted({row[0] for row in found.collect()})


def test_a_compaction_keeps_of_a_joins_context_what_it_can_still_meet(
    spark, base_settings, tmp_path
):
    settings = with_sections(base_settings, storage={"root": str(tmp_path)})
    lane = open_lane(spark, Tables.of(settings), "kappa-v1")
    view = ("page_view", 1, 10, None, None)
    _micro_batch(spark, lane, [(*view, T0 + 90 * M), (*view, T0 + 125 * M), (*view, T0 + 140 * M)])
    _micro_batch(
        spark,
        lane,
        [
            (*view, T0 + 160 * M),
            (*view, T0 + 175 * M),
            ("purchase", 1, 10, 1, 1.0, T0 + 165 * M),  # before the watermark: met by none
            ("purchase", 2, 10, 1, 1.0, T0 + 172 * M),
        ],
    )
    late = [
        ("page_view", 2, 10, None, None, T0 + 130 * M),
        ("page_view", 2, 10, None, None, T0 + 131 * M),
    ]
    _micro_batch(spark, lane, late, late=True)
    # parts no micro-batch reads any more: the layout before parts were named for their
    # seed, and one seeded before the view settings changed; rows the rule would keep
    for stale in ("context/conversions", lane_log.context_part("conversions", seeded_by=0)):
        _micro_batch(spark, lane, [("page_view", 3, 10, None, None, T0 + 170 * M)], part=stale)
    assert len(_parts(spark, lane)) == 3

    parts = {"conversions": ContextPart(PART, rule_of(settings.views))}
    joins = contexts(spark, settings, lane, REGISTRY, CLOCK, parts)
    version = compact(spark, lane, REGISTRY, EPOCH, None, joins)

    assert version is not None
    note = next(
        a["commitInfo"]
        for a in storage.commit_actions(spark, lane.log, version)
        if "commitInfo" in a
    )
    assert note.get("userMetadata") == storage.SAME_ANSWERS
    assert _parts(spark, lane) == [PART]
    kept = lane_log.read(spark, lane, PART, column=lane_log.CONTEXT)
    assert kept is not None
    assertDataFrameEqual(
        kept.select("event_type", "user_id", "event_time", F.size("late_for").alias("late")),
        [
            Row(
                "page_view", 1, T0 + 125 * M, 0
            ),  # the hour's first (the one at 1 h 30 is past the keep-back)
            Row("page_view", 1, T0 + 175 * M, 0),  # and last
            Row("purchase", 2, T0 + 172 * M, 0),
            Row("page_view", 2, T0 + 130 * M, 1),  # late: each kept whole
            Row("page_view", 2, T0 + 131 * M, 1),
        ],
    )


def _produce_events(settings, spec: WorkloadSpec) -> None:
    """A spec's events without its catalog: the lane joins the first spec's throughout."""
    assert produce(settings, [r for r in generate(spec) if r.topic == "events"]).failed == 0


def _claim(spark, settings) -> ContextPart | None:
    """The context part the lane's latest progress row names for ``conversions``."""
    lane = find_lane(spark, Tables.of(settings), LAMBDA_LANE)
    assert lane is not None
    last = progress.latest(spark, lane)
    assert last is not None
    return last.context_parts.get("conversions")


def _context(spark, settings, claim: ContextPart):
    lane = find_lane(spark, Tables.of(settings), LAMBDA_LANE)
    assert lane is not None
    return lane_log.read(spark, lane, claim.part, column=lane_log.CONTEXT)


def test_a_log_written_before_joins_kept_their_context_is_seeded_from_what_it_retained(
    spark, topic_settings
):
    settings = topic_settings
    registry = build(settings).registry
    # a lane of before: its join read every retained event, and its log has no context
    before = ViewRegistry([replace(v, context_kept=None) for v in registry], registry.contract)
    start = datetime(2026, 11, 1, 8)
    produce_spec(settings, small_spec(61, start, SPAN))
    run_speed(spark, settings, before, until_caught_up=True)
    assert _claim(spark, settings) is None

    # the first micro-batch of today's lane reads the retained events once more and seeds
    # the part; the next reads the part alone, its purchases meeting the first run's views
    _produce_events(settings, small_spec(62, start + 20 * M, SPAN))
    run_speed(spark, settings, registry, until_caught_up=True)
    claim = _claim(spark, settings)
    assert claim is not None and claim.rule == rule_of(settings.views)
    seeded = _context(spark, settings, claim)
    assert seeded is not None
    assert seeded.where(F.col("event_time") < F.lit(start + 20 * M)).count() > 0
    _produce_events(settings, small_spec(63, start + 40 * M, SPAN))
    run_speed(spark, settings, registry, until_caught_up=True)

    assert _claim(spark, settings) == claim, "read and added to, not seeded again"
    assert_served_per_contract(spark, settings, LAMBDA_LANE)


def _event(n: int, kind: str, user: int, at: datetime, **extra: object) -> Record:
    return event_record(f"rule-{n:04d}", kind, user, 1, at, **extra)


def test_a_lane_whose_view_settings_changed_reads_no_part_kept_by_the_ones_before(
    spark, topic_settings
):
    settings = topic_settings
    users = range(9_101, 9_109)
    hour = datetime(2026, 11, 1, 8)
    # each user views product 1 at 8:00, 8:25 and 8:50: with a one-hour look-back the
    # part keeps the hour's first and last (8:00, 8:50), not 8:25
    views = [
        _event(3 * i + k, "page_view", u, hour + m * M)
        for i, u in enumerate(users)
        for k, m in enumerate((0, 25, 50))
    ]
    assert produce(settings, views).failed == 0
    run_speed(spark, settings, build(settings).registry, until_caught_up=True)
    before = _claim(spark, settings)
    assert before is not None

    # Lambda serves a 20-minute look-back: a batch run with it, the same lane rebased
    changed = with_sections(settings, views={"conversion_lookback": "20 minutes"})
    registry = build(changed).registry
    run = run_batch(spark, changed, registry, force=True).run
    run_speed(spark, changed, registry, until_caught_up=True)
    # purchases at 8:41, on time and after the cutoff: only the 8:25 view is in their
    # look-back, so each converts only if the lane seeded a part by the new settings
    bought = hour + 41 * M
    purchases = [
        _event(100 + i, "purchase", u, bought, quantity=1, price=9.5) for i, u in enumerate(users)
    ]
    assert produce(changed, purchases).failed == 0
    run_speed(spark, changed, registry, until_caught_up=True)

    after = _claim(spark, changed)
    assert after is not None and after.rule == rule_of(changed.views)
    assert after.part != before.part
    served = assert_served_per_contract(spark, changed, LAMBDA_LANE, cutoff=run.cutoff)
    assert len(served) == len(views) + len(purchases)
    window = bought.replace(second=0, microsecond=0)
    row = next(
        r for r in read_served(spark, changed, "conversions").collect() if r.window_start == window
    )
    assert (row.purchases, row.converted) == (len(users), len(users)), "the case happened"
