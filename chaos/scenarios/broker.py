"""The broker SIGKILLed and restarted under ``lk produce``, and under the speed layer.

Produce: every acknowledged record must be in the log exactly as often as it was sent,
and whatever the producer could not send it must name (positions in the workload).
Speed: the running ``lk speed`` must carry on after the restart with no operator, and
the served views must equal the oracle. Its Kafka clients are made impatient, so the
outage always outlasts them: what is tested is the lane's own restart, not luck with timing.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable

from chaos.bench import Bench, checkpoint_ids, in_slices, lane_dir, rng_for
from chaos.ledger import count_back
from chaos.procs import WAIT_S, ChaosError, LkProcess, wait_for
from chaos.results import Outcome
from chaos.verify import check_served
from config.settings import Settings, with_sections
from designs.lambda_arch import LAMBDA_LANE
from designs.platform import build
from designs.status import lane_status
from event_log.topics import end_offsets
from infra import kafka_broker
from lake.tables import Tables
from speed_layer.checkpoint import caught_up
from speed_layer.lane import find_lane
from speed_layer.stream import LOG_AWAY

PRODUCE = "broker_kill_produce"
SPEED = "broker_kill_speed"

#: Spark's Kafka clients give up on a broker after about 3 s instead of a minute, and the
#: driver asks for the latest offsets once: any outage of the scenario fails the query.
IMPATIENT = {
    "kafka.default.api.timeout.ms": "3000",
    "kafka.request.timeout.ms": "2000",
    "fetchOffset.numRetries": "1",
    "kafkaConsumer.pollTimeoutMs": "3000",
}


def produce_args(events: int, seed: int) -> list[str]:
    """``lk produce`` for the bench's workload shape (the same records as ``Bench.workload``)."""
    return [
        "produce",
        "--events",
        str(events),
        "--seed",
        str(seed),
        "--users",
        "60",
        "--products",
        "30",
        "--json",
    ]


def report_of(child: LkProcess) -> dict:
    """The JSON report ``lk produce --json`` printed."""
    text = child.output.read_text(errors="replace")
    start = text.find("{")
    if start < 0:
        raise ChaosError(f"lk produce printed no report:\n{child.tail()}")
    return json.loads(text[start:])


def produced(settings: Settings) -> int:
    """Records in the events topic now (0 while the broker is down)."""
    try:
        return sum(end_offsets(settings, settings.kafka.events_topic).values())
    except Exception:
        return 0


def produce_through(
    bench: Bench,
    settings: Settings,
    seed: int,
    kill: Callable[[Settings, random.Random], str],
    name: str,
) -> Outcome:
    """``lk produce`` a workload while ``kill(settings, rng)`` does harm; count it all back."""
    rng = rng_for(seed, name)
    started = time.perf_counter()
    outcome = Outcome(name, seed)
    events = bench.events * 10
    records = bench.workload(seed, events)
    child = LkProcess(settings, produce_args(events, seed), bench.folder)
    try:
        at = int(len(records) * rng.uniform(0.1, 0.5))
        wait_for(lambda: produced(settings) >= at, f"{at} records in the log", WAIT_S, child)
        outcome.notes.append(kill(settings, rng))
        outcome.faults = 1
        code = child.wait(WAIT_S)
    finally:
        child.kill()
    report = report_of(child)
    ledger = count_back(settings, records, report["unsent_positions"], report["stopped_at"])
    outcome.notes.append(
        f"lk produce exit {code}: sent {report['sent']}, acknowledged {report['acknowledged']}, "
        f"failed {report['failed']}, stopped at {report['stopped_at']}; log holds "
        f"{ledger.logged}; {ledger.unsent_found} reported-unsent records were written anyway"
    )
    outcome.events_checked = ledger.sent
    outcome.lost, outcome.duplicated = ledger.lost, ledger.duplicated
    outcome.unexplained = ledger.unexplained
    if code != 0 and not (report["unsent_positions"] or report["stopped_at"] is not None):
        outcome.unexplained += 1  # a failure that names nothing
    outcome.seconds = time.perf_counter() - started
    return outcome


def _restart_single(settings: Settings, rng: random.Random) -> str:
    down_s = rng.uniform(1.0, 6.0)
    pid = kafka_broker.kill_node(settings, 1)
    time.sleep(down_s)
    began = time.monotonic()
    kafka_broker.start_node(settings, 1)
    return f"broker pid {pid} killed, down {down_s:.1f} s, back in {time.monotonic() - began:.1f} s"


def run_produce(bench: Bench, seed: int) -> Outcome:
    """The single broker killed and restarted while ``lk produce`` sends."""
    return produce_through(bench, bench.fresh("lambda"), seed, _restart_single, PRODUCE)


def run_speed(bench: Bench, seed: int) -> Outcome:
    """The broker killed and restarted under a running ``lk speed``; it must carry on."""
    rng = rng_for(seed, SPEED)
    started = time.perf_counter()
    outcome = Outcome(SPEED, seed)
    settings = bench.fresh("lambda")
    first, second = in_slices(bench.workload(seed), 2)
    bench.produce(settings, first)
    checkpoint = lane_dir(settings, "lambda", "speed", "checkpoint")
    impatient = with_sections(settings, kafka={"spark_options": IMPATIENT})
    speed = LkProcess(impatient, ["speed"], bench.folder)
    try:
        wait_for(lambda: bool(checkpoint_ids(checkpoint, "commits")), "a commit", WAIT_S, speed)
        outcome.notes.append(_restart_single(settings, rng))
        outcome.faults = 1
        bench.produce(settings, second)
        target = end_offsets(settings, settings.kafka.events_topic)
        try:
            wait_for(
                lambda: _caught_up(bench, settings, target),
                "catch-up after the restart",
                WAIT_S,
                speed,
                poll_s=1.0,
            )
            outcome.notes.append("lk speed caught up after the broker restart, no operator")
        except ChaosError as error:
            outcome.unexplained += 1  # the speed layer needed an operator
            outcome.notes.append(f"lk speed did not carry on: {error}")
    finally:
        speed.kill()
    restarts = speed.output.read_text(errors="replace").count(LOG_AWAY)
    shown = (lane_status(bench.spark, settings, LAMBDA_LANE).get("log_outages") or {}).get(
        "restarts"
    )
    outcome.notes.append(
        f"lk speed restarted its lane {restarts} times while the log was away; "
        f"lk status says {shown}"
    )
    build(settings).run_streaming(bench.spark, until_caught_up=True)
    check = check_served(bench.spark, settings, LAMBDA_LANE)
    outcome.notes.append(check.describe())
    outcome.events_checked = check.events_checked
    outcome.lost, outcome.duplicated = check.lost, check.duplicated
    outcome.unexplained += check.unexplained
    outcome.seconds = time.perf_counter() - started
    return outcome


def _caught_up(bench: Bench, settings: Settings, target: dict[int, int]) -> bool:
    lane = find_lane(bench.spark, Tables.of(settings), LAMBDA_LANE)
    return lane is not None and caught_up(bench.spark, lane, target)
