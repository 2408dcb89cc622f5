"""Run a lane until it has caught up or is stopped: the loop, and the errors that end it.

The loop starts the lane's query (:mod:`speed_layer.query`), moves it onto a newer epoch
between micro-batches (:mod:`speed_layer.micro_batch`), saves each micro-batch's metrics
(:mod:`speed_layer.metrics`) and restarts a failed query when
:mod:`speed_layer.restarts` allows it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass

from pyspark.sql import SparkSession
from pyspark.sql.streaming import StreamingQuery

from config.errors import LkError
from config.settings import Settings
from event_log.kafka_source import log_unreachable
from event_log.topics import end_offsets, start_offsets
from lake.pools import LIVE, in_pool
from speed_layer.checkpoint import caught_up, committed_ends, last_committed
from speed_layer.epoch import Epoch
from speed_layer.lane import Lane
from speed_layer.metrics import Progress, Tally
from speed_layer.micro_batch import MicroBatchProcessor
from speed_layer.query import start_lane
from speed_layer.recovery import recover
from speed_layer.restarts import Outage, is_restart_metrics_bug
from views.loader import check_views
from views.registry import ViewRegistry

log = logging.getLogger(__name__)
#: What a lane logs when it restarts because the log was out of reach (chaos counts it).
LOG_AWAY = "the log is out of reach"


class EventsLostError(LkError, RuntimeError):
    """Retention deleted events a lane had not read yet; the message names the lane and ranges."""


class LaneFailedError(LkError, RuntimeError):
    """A lane's query failed; the message is why, without the query's plan that follows it.

    Spark's failure text is its reason (an exception, or the Python traceback from
    ``foreachBatch``) and then a logical plan of a hundred lines; the cause keeps it all.
    """

    def __init__(self, lane: str, error: BaseException) -> None:
        reason = str(error).split("=== Streaming Query ===")[0].strip() or type(error).__name__
        lines = reason.splitlines()
        if len(lines) > REASON_LINES:
            lines = [*lines[:REASON_LINES], f"... ({len(lines) - REASON_LINES} more lines)"]
        super().__init__(f"lane {lane} failed: " + "\n".join(lines))


#: How many lines of a failed query's reason a :class:`LaneFailedError` keeps.
REASON_LINES = 40
#: How often a lane that catches up looks whether it has: a replay or a catch-up ends
#: this soon after its last commit, not up to a live lane's poll later.
CATCH_UP_POLL_S = 0.1


def check_retained(spark: SparkSession, settings: Settings, lane: Lane) -> None:
    """Refuse to go on if the log no longer holds the next offset the lane has to read.

    The lane resumes after its last committed micro-batch; if retention moved a
    partition's start past that offset, the events in between are gone unread. Spark's
    own ``failOnDataLoss`` would fail somewhere inside a micro-batch; this says up front
    which lane lost which offsets.
    """
    resume_at = committed_ends(spark, lane)
    if not resume_at:
        return
    first = start_offsets(settings, settings.kafka.events_topic)
    lost = {p: (o, first[p]) for p, o in resume_at.items() if first.get(p, 0) > o}
    if lost:
        ranges = ", ".join(
            f"partition {p} offsets [{a}, {b})" for p, (a, b) in sorted(lost.items())
        )
        raise EventsLostError(
            f"lane {lane.name}: retention deleted events of {settings.kafka.events_topic!r} "
            f"it had not read ({ranges}); {sum(b - a for a, b in lost.values())} events lost. "
            "Rebuild the lane from a batch run (Lambda) or refuse the version (Kappa)."
        )


@dataclass(frozen=True)
class LaneRun:
    """How a run of a lane ended."""

    lane: str
    micro_batches: int
    input_rows: int
    seconds: float


def _await_progress(query: StreamingQuery, batch_id: int | None, timeout_s: float = 30.0) -> None:
    """Wait until the query has reported micro-batch ``batch_id``'s progress.

    Spark commits a micro-batch before it reports its progress. A lane that stopped as
    soon as the checkpoint reached the target would leave ``_metrics.json`` one
    micro-batch short, and the Kappa DAG's sensor, which reads that file, would see a
    replay that exited before the target.
    """
    deadline = time.monotonic() + timeout_s
    while batch_id is not None and time.monotonic() < deadline:
        last = query.lastProgress
        # pyspark types the timeout as int; it takes seconds as a float
        if (last and last.get("batchId", -1) >= batch_id) or query.awaitTermination(
            0.1  # type: ignore[arg-type]
        ):
            return


def run_lane(
    spark: SparkSession,
    settings: Settings,
    lane: Lane,
    registry: ViewRegistry,
    epoch: Callable[[], Epoch],
    *,
    until_caught_up: bool,
    on_progress: Progress | None = None,
    poll_s: float = 1.0,
    restarts: int = 2,
) -> LaneRun:
    """Run a lane until it has caught up (or forever, until interrupted).

    Between micro-batches the lane follows its epoch (:meth:`MicroBatchProcessor.
    follow_epoch`): a batch run published while no new events arrive is served anyway,
    once before the query starts and then at every poll.

    A lane whose log goes out of reach (a broker restarting, a leader moving) restarts
    from its checkpoint, backing off, for up to ``stream.log_outage``: what it had
    committed stays committed, and the micro-batch it was in runs again, as after a crash.

    A live lane (not catching up) runs in the scheduler's live pool (:mod:`lake.pools`),
    ahead of a recompute sharing its driver.
    """
    started = time.perf_counter()
    poll_s = min(poll_s, CATCH_UP_POLL_S) if until_caught_up else poll_s
    check_views(spark, registry, settings)
    target = end_offsets(settings, settings.kafka.events_topic) if until_caught_up else {}
    tally = Tally(spark, lane, on_progress)
    outage = Outage(settings.stream.log_outage.total_seconds())
    bug_restarts = 0
    with nullcontext() if until_caught_up else in_pool(spark, LIVE):
        while True:
            query: StreamingQuery | None = None
            processor: MicroBatchProcessor | None = None
            try:
                lane = tally.lane = recover(spark, lane)
                check_retained(spark, settings, lane)
                processor = MicroBatchProcessor(spark, settings, lane, registry, epoch)
                processor.follow_epoch()
                query = start_lane(spark, settings, lane, processor, catching_up=until_caught_up)
                first = True  # a lane resumed caught up runs no micro-batch to report
                while query.isActive:
                    query.awaitTermination(poll_s)  # type: ignore[arg-type]  # float s, as above
                    processor.follow_epoch()
                    reported = tally.record(query, processor.timings)
                    # the checkpoint is read at the first poll, then once per micro-batch
                    # reported (Spark reports one after its commit), not at every poll
                    look = until_caught_up and (first or reported)
                    first = False
                    if look and caught_up(spark, lane, target):
                        log.info("lane %s caught up with %s", lane.name, target)
                        _await_progress(query, last_committed(spark, lane))
                        tally.record(query, processor.timings)
                        break
                else:
                    log.info("lane %s: the query ended by itself", lane.name)
                    query.awaitTermination()  # raise what ended it, if anything
                break
            except KeyboardInterrupt:
                log.info("stopping lane %s", lane.name)
                break
            except EventsLostError:
                raise
            except Exception as error:
                headline = str(error).splitlines()[0] if str(error) else type(error).__name__
                if bug_restarts < restarts and is_restart_metrics_bug(error):
                    bug_restarts += 1
                    log.warning(
                        "lane %s: restarting after Spark's restart bug: %s", lane.name, headline
                    )
                    continue
                if log_unreachable(error) and outage.goes_on(tally.batches):
                    tally.restarted(headline)
                    log.warning(
                        "lane %s: %s (%s); restart %d in %.0f s",
                        lane.name,
                        LOG_AWAY,
                        headline,
                        outage.restarts,
                        outage.backoff_s,
                    )
                    time.sleep(outage.backoff_s)
                    continue
                raise LaneFailedError(lane.name, error) from error
            finally:
                if query is not None and query.isActive:
                    query.stop()
                if processor is not None:
                    processor.close()
    return LaneRun(
        lane=lane.name,
        micro_batches=tally.batches,
        input_rows=tally.rows,
        seconds=time.perf_counter() - started,
    )
