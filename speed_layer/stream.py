"""Build and run a lane's streaming query: Kafka -> decode -> de-duplicate -> foreachBatch."""

from __future__ import annotations

import ast
import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery

from config.settings import Settings, format_duration
from event_log.contract import EventContract
from event_log.decode import decode_events
from event_log.kafka_source import log_unreachable, read_stream
from event_log.topics import end_offsets, start_offsets
from speed_layer.checkpoint import caught_up, last_committed, planned_offsets
from speed_layer.lane import Lane
from speed_layer.metrics import read_metrics, watermark_drops, write_metrics
from speed_layer.micro_batch import Epoch, MicroBatchProcessor
from speed_layer.recovery import recover
from views.loader import check_views
from views.registry import ViewRegistry

log = logging.getLogger(__name__)
Progress = Callable[[dict], None]
#: What a lane logs when it restarts because the log was out of reach (chaos counts it).
LOG_AWAY = "the log is out of reach"
RECENT = 50  # micro-batches whose phase durations ``_metrics.json`` keeps (for medians)


class EventsLostError(RuntimeError):
    """Retention deleted events a lane had not read yet; the message names the lane and ranges."""


class LaneFailedError(RuntimeError):
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


def check_retained(spark: SparkSession, settings: Settings, lane: Lane) -> None:
    """Refuse to go on if the log no longer holds the next offset the lane has to read.

    The lane resumes after its last committed micro-batch; if retention moved a
    partition's start past that offset, the events in between are gone unread. Spark's
    own ``failOnDataLoss`` would fail somewhere inside a micro-batch; this says up front
    which lane lost which offsets.
    """
    batch = last_committed(spark, lane)
    if batch is None:
        return
    resume_at = planned_offsets(spark, lane, batch)
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


def deduplicated_events(
    spark: SparkSession, settings: Settings, contract: EventContract
) -> DataFrame:
    """The decoded ``events`` stream with re-sends (same event id) dropped, lowest offset first.

    De-duplication is Spark's stateful ``dropDuplicates`` over every id the lane has read,
    as the batch layer and the oracle do over the whole log (``docs/semantics.md``,
    "Duplicates"): a re-send hours after its original counts once, in every design. Its
    state lives in the checkpoint (RocksDB) and grows with the log's distinct ids; no
    watermark runs here, so nothing is dropped for its time. Lateness is judged per view,
    downstream, where late events are counted and kept. Malformed records keep a key of
    their own.

    With ``stream.dedup_horizon`` set, ids are held only that long in Kafka append time
    (``dropDuplicatesWithinWatermark``): bounded state, but a record behind the global
    watermark (a partition lagging the others by more than the horizon in a catch-up) is
    dropped. Spark counts those (``numRowsDroppedByWatermark``); the lane adds them up in
    ``_metrics.json`` (``watermark_drops``), ``lk status`` shows them, and a Kappa replay
    that dropped any is refused.
    """
    decoded = decode_events(read_stream(spark, settings, settings.kafka.events_topic), contract)
    event_id = F.col(contract.id_field).cast("string")
    key = F.when(F.col("reason").isNull(), event_id).otherwise(
        F.format_string("malformed:%d:%d", F.col("partition"), F.col("offset"))
    )
    keyed = decoded.withColumn("_dedup_key", key)
    horizon = settings.stream.dedup_horizon
    if horizon is None:
        return keyed.dropDuplicates(["_dedup_key"]).drop("_dedup_key")
    return (
        keyed.withWatermark("kafka_timestamp", format_duration(horizon))
        .dropDuplicatesWithinWatermark(["_dedup_key"])
        .drop("_dedup_key")
    )


def start_lane(
    spark: SparkSession,
    settings: Settings,
    lane: Lane,
    processor: MicroBatchProcessor,
    *,
    catching_up: bool = False,
) -> StreamingQuery:
    """Start the lane's query on a processing-time trigger.

    Catching up uses an immediate trigger and stops once the log end seen at start is
    committed: a checkpoint left by a run killed mid-batch restarts cleanly that way,
    which Spark 4.1's ``availableNow`` does not always do. It also runs no *no-data*
    micro-batch (Spark's eviction of de-duplication state when the watermark moves
    without new rows): after the last data micro-batch there is nothing left to run,
    so the stop lands between micro-batches instead of interrupting one. The setting
    is copied into the query's own session at start, so it is restored at once.
    """
    key = "spark.sql.streaming.noDataMicroBatches.enabled"
    before = spark.conf.get(key, "true")
    interval = "0 seconds" if catching_up else settings.stream.trigger_interval
    if catching_up:
        spark.conf.set(key, "false")
    try:
        return (
            deduplicated_events(spark, settings, processor.registry.contract)
            .writeStream.foreachBatch(processor)
            .option("checkpointLocation", lane.checkpoint)
            .queryName(lane.name.replace("-", "_"))
            .trigger(processingTime=interval)
            .start()
        )
    finally:
        spark.conf.set(key, before)


def source_offsets(value: object) -> dict:
    """Spark reports a source offset as a dict, its JSON text, or (PySpark 4) its repr."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return ast.literal_eval(value)
    return value if isinstance(value, dict) else {}


def query_metrics(query: StreamingQuery) -> dict | None:
    """The query's last progress: rates, duration, end offsets (None before the first)."""
    last = query.lastProgress
    return progress_metrics(last) if last else None


def progress_metrics(progress: dict) -> dict:
    """One micro-batch's progress from Spark: rates, durations, end offsets, dedup state."""
    return {
        "batch_id": progress.get("batchId"),
        "timestamp": progress.get("timestamp"),
        "input_rows": progress.get("numInputRows"),
        "input_rows_per_second": progress.get("inputRowsPerSecond"),
        "processed_rows_per_second": progress.get("processedRowsPerSecond"),
        "batch_duration_ms": (progress.get("durationMs") or {}).get("triggerExecution"),
        "duration_ms": dict(progress.get("durationMs") or {}),
        "end_offsets": source_offsets((progress.get("sources") or [{}])[0].get("endOffset")),
        "dedup_state": dedup_state(progress),
    }


#: Spark's timings of the de-duplication state (``stateOperators``) as lane phases.
STATE_PHASES = {
    "allUpdatesTimeMs": "stateUpdates",
    "allRemovalsTimeMs": "stateRemovals",
    "commitTimeMs": "stateCommit",
}


def dedup_state(progress: dict) -> dict | None:
    """The de-duplication state after a micro-batch: ids held, what it dropped, its cost.

    ``duplicates``: re-sends it dropped in this micro-batch; ``dropped_by_watermark``:
    records behind the watermark it dropped unseen (only with ``stream.dedup_horizon``
    set; Spark then also scans the whole state for expired ids every micro-batch).
    """
    operators = progress.get("stateOperators") or []
    if not operators:
        return None
    state = operators[0]
    return {
        "rows": state.get("numRowsTotal"),
        "rows_updated": state.get("numRowsUpdated"),
        "rows_removed": state.get("numRowsRemoved"),
        "memory_bytes": state.get("memoryUsedBytes"),
        "duplicates": (state.get("customMetrics") or {}).get("numDroppedDuplicateRows"),
        "dropped_by_watermark": state.get("numRowsDroppedByWatermark") or 0,
        **{phase: state.get(key) for key, phase in STATE_PHASES.items()},
    }


def _is_restart_metrics_bug(error: BaseException) -> bool:
    """Spark 4.1's Kafka source NPEs in ``metrics`` after re-running a planned batch.

    It happens once, at the end of the first micro-batch after a restart from a crash
    (the batch itself and its commit are done by then); a second start goes on normally.
    """
    return "KafkaMicroBatchStream.metrics" in str(error) or (
        "NullPointerException" in str(error) and "Option.get()" in str(error)
    )


@dataclass
class _Tally:
    """Counts a lane's micro-batches and saves each one's metrics once (``_metrics.json``).

    Besides Spark's own durations (``durationMs``: planning, ``addBatch``, the WAL and
    commit writes), each micro-batch's phases inside ``addBatch`` are kept
    (:attr:`MicroBatchProcessor.timings`), and the de-duplication state's own timings
    inside ``count`` (:data:`STATE_PHASES`), so ``lk status`` can say where the time goes.
    The lane's restarts while its log was out of reach go in as well (``log_outages``),
    and the records a watermark dropped over the lane's life (``watermark_drops``, carried
    over from the file a previous run left): every micro-batch's progress counts once.
    """

    spark: SparkSession
    lane: Lane
    on_progress: Progress | None
    batches: int = 0
    rows: int = 0
    last_id: int | None = None
    recent_phases: list[dict[str, int]] = field(default_factory=list)
    outages: dict[str, Any] = field(default_factory=lambda: {"restarts": 0, "last": None})
    watermark_drops: int = 0

    def __post_init__(self) -> None:
        before = read_metrics(self.spark, self.lane.root)
        self.watermark_drops = watermark_drops(before)
        self.last_id = (before or {}).get("batch_id")

    def restarted(self, reason: str) -> None:
        """Note a restart because the log was out of reach (saved with the next metrics)."""
        at = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        self.outages = {
            "restarts": self.outages["restarts"] + 1,
            "last": {"at": at, "reason": reason},
        }

    def record(self, query: StreamingQuery, timings: dict[int, dict[str, int]]) -> None:
        """Take in the micro-batches the query reported since the last call, in order."""
        reported = [progress_metrics(p) for p in query.recentProgress]
        new = [
            m
            for m in reported
            if m["batch_id"] is not None and (self.last_id is None or m["batch_id"] > self.last_id)
        ]
        for metrics in new:
            self._count(metrics, timings)
        if new:
            last = new[-1]
            write_metrics(
                self.spark,
                self.lane,
                {
                    **last,
                    "recent_phase_ms": self.recent_phases,
                    "log_outages": self.outages,
                    "watermark_drops": self.watermark_drops,
                },
            )
            if self.on_progress:
                self.on_progress(last)

    def _count(self, metrics: dict, timings: dict[int, dict[str, int]]) -> None:
        state = metrics["dedup_state"] or {}
        phases = {
            **metrics["duration_ms"],
            **timings.get(metrics["batch_id"], {}),
            **{
                phase: state[phase]
                for phase in STATE_PHASES.values()
                if state.get(phase) is not None
            },
        }
        self.recent_phases = [*self.recent_phases, phases][-RECENT:]
        self.watermark_drops += state.get("dropped_by_watermark") or 0
        self.last_id = metrics["batch_id"]
        self.batches += 1
        self.rows += metrics["input_rows"] or 0


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
        if (last and last.get("batchId", -1) >= batch_id) or query.awaitTermination(0.1):
            return


@dataclass
class _Outage:
    """How long the log has been out of reach, counted across restarts of a lane.

    A micro-batch committed since the last failure ends the outage: a lane that
    recovers and fails again later gets the whole ``stream.log_outage`` again.
    """

    limit_s: float
    since: float | None = None
    batches_then: int = 0
    restarts: int = 0

    def goes_on(self, batches: int) -> bool:
        """Record a failure; whether the lane may restart (:attr:`backoff_s` says when)."""
        now = time.monotonic()
        if self.since is None or batches > self.batches_then:
            self.since, self.restarts = now, 0
        self.batches_then = batches
        self.restarts += 1
        return now - self.since < self.limit_s

    @property
    def backoff_s(self) -> float:
        """1, 2, 4 ... seconds between restarts, at most 30."""
        return float(min(2 ** (self.restarts - 1), 30))


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
    """
    started = time.perf_counter()
    check_views(spark, registry, settings)
    target = end_offsets(settings, settings.kafka.events_topic) if until_caught_up else {}
    tally = _Tally(spark, lane, on_progress)
    outage = _Outage(settings.stream.log_outage.total_seconds())
    bug_restarts = 0
    while True:
        query: StreamingQuery | None = None
        processor: MicroBatchProcessor | None = None
        try:
            lane = tally.lane = recover(spark, lane)
            check_retained(spark, settings, lane)
            processor = MicroBatchProcessor(spark, settings, lane, registry, epoch)
            processor.follow_epoch()
            query = start_lane(spark, settings, lane, processor, catching_up=until_caught_up)
            while query.isActive:
                query.awaitTermination(poll_s)
                processor.follow_epoch()
                tally.record(query, processor.timings)
                if until_caught_up and caught_up(spark, lane, target):
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
            if bug_restarts < restarts and _is_restart_metrics_bug(error):
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
