"""Publish the served ``purchase_bursts`` to the ``alerts`` topic, each burst exactly once.

The topic is compacted and keyed by a burst's identity (``user_id:burst_at``); its
latest value per key is what readers were told. A publish is a difference, not a
stream of events: it reads the topic back to its end (``read_committed``), reads the
bursts served now, and sends what differs (:func:`difference`) in one Kafka
transaction. Its transactional id is stable per design and topic, so

- a publisher that dies mid-way (SIGKILL) leaves an open transaction that the next
  one's ``init_transactions`` aborts; nothing of it is ever visible, and the next run
  computes the same difference again;
- two publishers of one design (the lane's process, a batch run's) fence each other:
  only the one that initialised last commits, and it read the topic after every
  earlier commit, and the served bursts after that (served tables only move forward).

So however often and from wherever it runs, the topic holds one ``open`` record per
served burst, one ``retracted`` record per burst a correction withdrew, and one more
``open`` only if a withdrawn burst is served again. docs/semantics.md, "Alerts".

A streaming lane publishes every few seconds for hours, so it does not start over each
time (:class:`LanePublisher`): its producer stays initialised, it keeps what the topic
says in memory, and it compares only the bursts the lane's commits since its last
publish could have changed. Anything that could have changed more (a new batch run or
version served, a refused send, another publisher fencing it) makes the next publish a
whole one again, as above.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.errors import KafkaError
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from config.settings import Settings
from lake.pools import DEFAULT, in_pool
from lake.source import ServingSource, ViewNotReadyError
from serving_layer.read import read_view, serving_state
from serving_layer.snapshot import to_json_value
from views import purchase_bursts
from views.registry import ViewRegistry

log = logging.getLogger(__name__)

#: the view whose rows are alerts
ALERT_VIEW = "purchase_bursts"
Status = Literal["open", "retracted"]
OPEN: Status = "open"
RETRACTED: Status = "retracted"


@dataclass(frozen=True)
class Alert:
    """One burst as the topic says it: who, when (ISO-8601 UTC), how many, open or not.

    ``purchases`` is the count when the burst was first published: a burst whose count
    grows later (a late purchase in its interval) is the same burst, not a new alert.
    """

    user_id: int
    burst_at: str
    purchases: int
    status: Status = OPEN

    @property
    def key(self) -> str:
        """The burst's identity, the same in every layer: ``user_id:burst_at``."""
        return f"{self.user_id}:{self.burst_at}"

    def to_json(self) -> bytes:
        """The record's value."""
        return json.dumps(asdict(self)).encode()

    @classmethod
    def of_json(cls, value: bytes) -> Alert:
        """The alert a record's value holds."""
        return cls(**json.loads(value))


@dataclass(frozen=True)
class AlertRecord:
    """One committed record of the topic, with the broker's append time (ms)."""

    alert: Alert
    appended_ms: int
    offset: int


@dataclass(frozen=True)
class Published:
    """What one publish committed."""

    opened: int
    retracted: int


def difference(served: Mapping[str, Alert], told: Mapping[str, Alert]) -> dict[str, Alert]:
    """What to send so the topic's latest value per key says what is served.

    Args:
        served: the bursts served now, by key.
        told: the topic's latest alert per key.

    Returns:
        By key: ``open`` for a served burst the topic does not hold open (new, or
        retracted before); ``retracted`` for a key the topic holds open that is no
        longer served. Nothing for a burst already told as it stands.
    """
    changes = {
        key: Alert(alert.user_id, alert.burst_at, alert.purchases, OPEN)
        for key, alert in served.items()
        if key not in told or told[key].status != OPEN
    }
    for key, last in told.items():
        if last.status == OPEN and key not in served:
            changes[key] = Alert(last.user_id, last.burst_at, last.purchases, RETRACTED)
    return changes


def read_records(settings: Settings, timeout_s: float = 60.0) -> list[AlertRecord]:
    """Every committed record of the alerts topic, in offset order (``read_committed``).

    Reads up to the last stable offset as it stood at the start: a transaction still
    open is neither waited for nor read.
    """
    consumer = KafkaConsumer(
        bootstrap_servers=settings.kafka.bootstrap_servers,
        group_id=None,
        enable_auto_commit=False,
        isolation_level="read_committed",
        client_id="lk-alerts-reader",
    )
    try:
        topic = settings.kafka.alerts_topic
        partitions = [TopicPartition(topic, p) for p in sorted(_partition_ids(consumer, topic))]
        consumer.assign(partitions)
        consumer.seek_to_beginning(*partitions)
        ends = consumer.end_offsets(partitions)
        records: list[AlertRecord] = []
        deadline = time.monotonic() + timeout_s
        while any(consumer.position(tp) < ends[tp] for tp in partitions):
            if time.monotonic() > deadline:
                raise TimeoutError(f"reading {topic} to its end took over {timeout_s:.0f} s")
            for batch in consumer.poll(timeout_ms=500).values():
                records.extend(
                    AlertRecord(Alert.of_json(r.value), r.timestamp, r.offset)
                    for r in batch
                    if r.value is not None
                )
        return sorted(records, key=lambda r: r.offset)
    finally:
        consumer.close()


def _partition_ids(consumer: KafkaConsumer, topic: str) -> set[int]:
    ids = consumer.partitions_for_topic(topic)
    if not ids:
        raise KafkaError(f"topic {topic} does not exist (lk infra up / ensure_topics makes it)")
    return set(ids)


def latest(records: list[AlertRecord]) -> dict[str, Alert]:
    """The topic's latest alert per key (what compaction keeps)."""
    return {r.alert.key: r.alert for r in records}


def served_alerts(
    spark: SparkSession,
    source: ServingSource,
    registry: ViewRegistry,
    settings: Settings,
    since: datetime | None = None,
    widest: timedelta | None = None,
) -> dict[str, Alert]:
    """The bursts ``source`` serves, read as every reader reads them, by key.

    ``since``: only the bursts at or after it, read from the purchases they count
    (:func:`views.purchase_bursts.reaching`), not from the whole history; ``widest``:
    no purchase's window is wider, so only the files of the time they reach are read.
    """
    view = registry.get(ALERT_VIEW)
    if since is None:
        rows = read_view(spark, source, view, settings.views)
    else:
        state = serving_state(spark, view, source)
        state = purchase_bursts.reaching(state, since, widest)
        rows = view.serve(state).where(F.col("burst_at") >= F.lit(since))
    alerts = (
        Alert(r.user_id, to_json_value(r.burst_at), r.purchases)
        for r in rows.select("user_id", "burst_at", "purchases").collect()
    )
    return {a.key: a for a in alerts}


def at_or_after(told: Mapping[str, Alert], since: datetime) -> dict[str, Alert]:
    """The alerts of bursts at or after ``since`` (ISO-8601 of one format sorts as time)."""
    bound = to_json_value(since)
    return {key: alert for key, alert in told.items() if alert.burst_at >= bound}


def transactional_id(settings: Settings, design: str) -> str:
    """Stable per design and topic: every publisher of one design fences the others."""
    return f"lk-alerts-{design}-{settings.kafka.alerts_topic}"


def publish(
    settings: Settings,
    design: str,
    served: Callable[[], Mapping[str, Alert]],
    *,
    before_commit: Callable[[], None] | None = None,
) -> Published:
    """Send the difference between ``served()`` and the topic in one transaction.

    The order is what makes it exactly once: fence the design's earlier publishers
    (``init_transactions``, which also aborts a transaction a killed one left open),
    then read the topic, then ask what is served, then send and commit.

    Args:
        settings: where the topic is.
        design: ``lambda`` or ``kappa`` (part of the transactional id).
        served: the bursts served now, by key (called after the fence).
        before_commit: called with the difference sent but not committed (tests kill
            the process there).

    Raises:
        KafkaError: the broker refused (a newer publisher fenced this one, or it is out
            of reach); nothing of this publish is visible.
    """
    producer = _producer(settings, design)
    try:
        producer.init_transactions()
        changes = difference(served(), latest(read_records(settings)))
        _send(producer, settings, changes, before_commit)
    finally:
        producer.close(timeout=10)
    return _published(changes)


def _producer(settings: Settings, design: str) -> KafkaProducer:
    return KafkaProducer(
        bootstrap_servers=settings.kafka.bootstrap_servers.split(","),
        transactional_id=transactional_id(settings, design),
        enable_idempotence=True,
        acks="all",
        client_id=f"lk-alerts-{design}",
    )


def _send(
    producer: KafkaProducer,
    settings: Settings,
    changes: Mapping[str, Alert],
    before_commit: Callable[[], None] | None = None,
) -> None:
    """``changes`` in one transaction of ``producer`` (none if there are none)."""
    if not changes:
        return
    producer.begin_transaction()
    try:
        for key, alert in changes.items():
            producer.send(settings.kafka.alerts_topic, key=key.encode(), value=alert.to_json())
        producer.flush()
        if before_commit:
            before_commit()
        producer.commit_transaction()
    except BaseException:
        # readers (read_committed) would wait behind an open transaction until it
        # times out; a fenced producer cannot abort, and need not (it was aborted)
        with suppress(KafkaError):
            producer.abort_transaction()
        raise


def _published(changes: Mapping[str, Alert]) -> Published:
    opened = sum(1 for a in changes.values() if a.status == OPEN)
    return Published(opened, len(changes) - opened)


def publish_served(
    spark: SparkSession,
    settings: Settings,
    registry: ViewRegistry,
    design: str,
    serving: Callable[[SparkSession], ServingSource],
) -> Published | None:
    """The design's hook: publish what ``serving`` serves now; a failure is only logged.

    A publish that fails changes nothing visible, and the next one (the lane's next
    commit, the next batch run or switch) sends the same difference and more, so a
    lane or a batch run does not fail for it. None: nothing published (no
    ``purchase_bursts`` registered, nothing served yet, or the broker refused).
    """
    if ALERT_VIEW not in registry.names():
        return None
    try:
        done = publish(
            settings, design, lambda: served_alerts(spark, serving(spark), registry, settings)
        )
    except ViewNotReadyError:
        return None
    except (KafkaError, TimeoutError) as err:
        log.warning("alerts not published (the next publish sends them): %s", err)
        return None
    if done.opened or done.retracted:
        log.info("alerts: %d opened, %d retracted", done.opened, done.retracted)
    return done


class LanePublisher:
    """A streaming lane's publisher: one producer for the lane's life, the topic kept in memory.

    A whole publish reads every burst served and the whole topic; after a few hours of a
    busy lane that is minutes of work every few seconds. This one does it once, then
    keeps the topic's latest alert per key (it is the only writer while it is not
    fenced), and each later publish reads only the bursts at or after the bound below
    and compares them with the kept alerts of those bursts. It keeps no alert of a
    burst before the bound, so its memory follows the lateness, not the history; a
    bound that goes back (a restarted lane's clock, one micro-batch undone) makes the
    next publish whole.

    The bound: the lane commits only events at or after its watermark, its clock less
    the view's allowed lateness ``lateness`` (:mod:`speed_layer.micro_batch`), so after
    a publish that read the source at clock ``c`` (:attr:`ServingSource.clock`), no
    burst before ``c - lateness`` can change while the same source is served
    (``description``). A new batch run, a rebase, another Kappa version, no clock, or
    a failure: the next publish is whole. Another publisher of the design fences this
    one: its next send fails, and the one after starts over.

    A whole publish also finds the widest window of the purchases served
    (:attr:`widest`, with the lane's own: every row the lane adds has that one), so
    that a bounded publish opens only the files of the time its bursts reach, not every
    file of the view's history.
    """

    def __init__(
        self,
        spark: SparkSession,
        settings: Settings,
        registry: ViewRegistry,
        design: str,
        serving: Callable[[SparkSession], ServingSource],
        lateness: timedelta,
    ) -> None:
        self.spark = spark
        self.settings = settings
        self.registry = registry
        self.design = design
        self.serving = serving
        self.lateness = lateness
        self._producer: KafkaProducer | None = None
        self._told: dict[str, Alert] = {}  # the topic's alerts of bursts at or after _kept
        self._kept: datetime | None = None  # None: of every burst
        self._seen: tuple[str, datetime] | None = None  # the last source's description, clock
        #: no purchase served by the source of the last whole publish has a wider window
        self.widest: timedelta | None = None
        #: how many publishes were whole, and how many bounded (logged at :meth:`close`)
        self.whole = 0
        self.bounded = 0

    def __call__(self) -> Published | None:
        """Publish what changed; None if nothing is served yet or the broker refused.

        A refusal is only logged, as :func:`publish_served` does: the next publish is a
        whole one, and sends it. Its Spark jobs run in the scheduler's default pool, behind
        the lane's micro-batches (:mod:`lake.pools`): nobody waits on an alert's seconds,
        and a reader waits on every micro-batch.
        """
        if ALERT_VIEW not in self.registry.names():
            return None
        try:
            with in_pool(self.spark, DEFAULT):
                return self._publish()
        except ViewNotReadyError:
            return None
        except (KafkaError, TimeoutError) as err:
            log.warning("alerts not published (the next publish sends them): %s", err)
            self.close()
            return None

    def _publish(self) -> Published:
        started = time.perf_counter()
        if self._producer is None:
            self._producer = _producer(self.settings, self.design)
            self._producer.init_transactions()
            self._seen = None
        source = self.serving(self.spark)
        since = self._since(source)
        if since is None:
            self._told, self._kept = latest(read_records(self.settings)), None
            self.widest = self._widest(source) if self._bounded() else None
        else:
            self._told, self._kept = at_or_after(self._told, since), since
        widest = None if since is None else self.widest
        served = served_alerts(self.spark, source, self.registry, self.settings, since, widest)
        changes = difference(served, self._told)
        _send(self._producer, self.settings, changes)
        self._told.update(changes)
        self._seen = (source.description, source.clock) if source.clock else None
        if since is None:
            self.whole += 1
        else:
            self.bounded += 1
        if changes:
            log.info(
                "alerts: %d changes in %.1f s (bursts since %s)",
                len(changes),
                time.perf_counter() - started,
                since or "ever",
            )
        return _published(changes)

    def _bounded(self) -> bool:
        """Whether the bursts are the platform's own (a view of the user's own has no bound)."""
        view = self.registry.get(ALERT_VIEW)
        return (view.compute, view.present) == (purchase_bursts.compute, purchase_bursts.present)

    def _since(self, source: ServingSource) -> datetime | None:
        if not self._bounded():
            return None
        return next_bound(self._seen, source, self.lateness, self._kept)

    def _widest(self, source: ServingSource) -> timedelta:
        """The widest window of the purchases ``source`` serves, and of the lane's own."""
        state = serving_state(self.spark, self.registry.get(ALERT_VIEW), source)
        own = self.settings.views.burst_window
        served = purchase_bursts.widest_window(state)
        return own if served is None else max(served, own)

    def close(self) -> None:
        """Release the producer (the next publish, if any, starts over)."""
        if self._producer is not None:
            with suppress(KafkaError):
                self._producer.close(timeout=10)
            log.info("alerts: %d whole publishes, %d bounded", self.whole, self.bounded)
        self._producer = None
        self._seen = None


def next_bound(
    seen: tuple[str, datetime] | None,
    source: ServingSource,
    lateness: timedelta,
    kept: datetime | None,
) -> datetime | None:
    """The earliest burst time a lane's commits since the last publish could change.

    Args:
        seen: the description and clock of the source the last publish read (None:
            there was none, or it had no clock).
        source: the source served now.
        lateness: the view's allowed lateness in the lane.
        kept: the earliest burst time whose alerts are in memory (None: every one).

    Returns:
        ``clock - lateness``; None (publish whole) if another source is served now, or
        if the bound is before the alerts in memory (the clock went back).
    """
    if seen is None or seen[0] != source.description:
        return None
    since = seen[1] - lateness
    if kept is not None and since < kept:
        return None
    return since


@contextmanager
def lane_alerts(
    spark: SparkSession,
    settings: Settings,
    registry: ViewRegistry,
    design: str,
    serving: Callable[[SparkSession], ServingSource],
    lateness: timedelta,
    on_progress: Callable[[dict], None] | None,
) -> Iterator[Callable[[dict], None]]:
    """A running lane's progress callback: ``on_progress``, then its alerts.

    A :class:`LanePublisher` at the lane's :class:`Cadence`, closed when the lane stops.
    """
    publisher = LanePublisher(spark, settings, registry, design, serving, lateness)
    try:
        yield Cadence(publisher, settings.kafka.alerts_every.total_seconds()).following(on_progress)
    finally:
        publisher.close()


class Cadence:
    """A streaming lane's publishing: after a commit, at most every ``every_s`` seconds.

    Reading the served bursts is a Spark job (a self-join), too much for every
    micro-batch of a one-second trigger; how often it runs changes when an alert
    appears, never how many times (each publish is a difference).
    """

    def __init__(self, publish: Callable[[], Any], every_s: float) -> None:
        self.publish = publish
        self.every_s = every_s
        self._last: float | None = None

    def after_commit(self) -> None:
        """A micro-batch committed: publish if the last publish is ``every_s`` old."""
        now = time.monotonic()
        if self._last is None or now - self._last >= self.every_s:
            self._last = now
            self.publish()

    def following(self, on_progress: Callable[[dict], None] | None) -> Callable[[dict], None]:
        """``on_progress`` (if any), then :meth:`after_commit`."""

        def progress(metrics: dict) -> None:
            if on_progress:
                on_progress(metrics)
            self.after_commit()

        return progress
