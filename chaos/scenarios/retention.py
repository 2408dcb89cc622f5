"""Retention deletes events a lagging lane has not read: named, never silent; Kappa refuses.

Real retention: the topic rolls a segment a second, the lane reads the first part of
the workload and stops; more events arrive in two bursts a few seconds apart; then
``retention.ms`` drops to one second and the broker deletes every closed segment. The
restarted lane must refuse with its name and the lost offsets (exactly those the
checkpoint had not reached), and ``lk kappa reprocess`` must refuse the truncated log.
"""

from __future__ import annotations

import re
import time

from kafka.admin import ConfigResource, ConfigResourceType

from chaos.bench import Bench, rng_for
from chaos.procs import wait_for
from chaos.results import Outcome
from config.settings import Settings
from designs.kappa.reprocess import TruncatedLogError, check_log_complete
from designs.lambda_arch import LAMBDA_LANE
from designs.platform import build
from event_log.topics import admin_client, start_offsets
from lake.tables import Tables
from speed_layer.checkpoint import last_committed, planned_offsets
from speed_layer.lane import find_lane
from speed_layer.stream import EventsLostError

NAME = "retention_lagging_lane"
_RANGE = re.compile(r"partition (\d+) offsets \[(\d+), (\d+)\)")


def _topic_config(settings: Settings, **configs: str) -> None:
    resource = ConfigResource(ConfigResourceType.TOPIC, settings.kafka.events_topic, configs)
    with admin_client(settings) as admin:
        admin.alter_configs([resource])


def run(bench: Bench, seed: int) -> Outcome:
    """Lane reads part A; B1 and B2 arrive; retention deletes A and B1; restart must refuse."""
    rng = rng_for(seed, NAME)
    started = time.perf_counter()
    outcome = Outcome(NAME, seed)
    settings = bench.fresh("lambda")
    _topic_config(settings, **{"segment.ms": "1000"})
    records = bench.workload(seed)
    a, b = int(len(records) * 0.4), int(len(records) * rng.uniform(0.6, 0.8))
    bench.produce(settings, records[:a])
    build(settings).run_streaming(bench.spark, until_caught_up=True)  # the lane, then it lags
    lane = find_lane(bench.spark, Tables.of(settings), LAMBDA_LANE)
    assert lane is not None
    read_to = planned_offsets(bench.spark, lane, last_committed(bench.spark, lane) or 0)
    time.sleep(1.5)
    bench.produce(settings, records[a:b])  # rolls A's segments closed
    time.sleep(1.5)
    bench.produce(settings, records[b:])  # rolls B1's closed
    _topic_config(settings, **{"retention.ms": "1000"})
    outcome.faults = 1
    wait_for(
        lambda: any(
            o > read_to.get(p, 0)
            for p, o in start_offsets(settings, settings.kafka.events_topic).items()
        ),
        "retention to delete unread events",
        120.0,
        poll_s=1.0,
    )
    first = start_offsets(settings, settings.kafka.events_topic)
    truth = {p: (read_to.get(p, 0), o) for p, o in first.items() if o > read_to.get(p, 0)}
    outcome.events_checked = sum(b_ - a_ for a_, b_ in truth.values())
    try:
        build(settings).run_streaming(bench.spark, until_caught_up=True)
        outcome.lost = outcome.events_checked  # served on as if nothing were missing
        outcome.notes.append("the lane ran on over deleted events: silent loss")
    except EventsLostError as error:
        named = {int(p): (int(x), int(y)) for p, x, y in _RANGE.findall(str(error))}
        outcome.notes.append(f"lane refused: {error}")
        if LAMBDA_LANE not in str(error) or named != truth:
            outcome.unexplained += 1
            outcome.notes.append(f"named {named}, deleted unread {truth}")
    try:
        check_log_complete(settings)
        outcome.unexplained += 1
        outcome.notes.append("Kappa would replay the truncated log")
    except TruncatedLogError as error:
        outcome.notes.append(f"Kappa refused: {error}")
    outcome.seconds = time.perf_counter() - started
    return outcome
