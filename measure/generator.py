"""A load generator in a process of its own, sending on a fixed schedule.

Record ``i`` is due at ``start + i / rate``. The child process sends each record when it
is due (never earlier) and records its **schedule lag**: the send time minus the due
time. A generator that fell behind its schedule hides queueing from any latency measured
from the actual send (coordinated omission), so :class:`ScheduleReport` says whether the
run is valid, and probes carry their due time as well as Kafka's acknowledgement.

Usage (the whole API)::

    plan = SteadyPlan(bootstrap_servers, topic, rate=1000, seconds=60,
                      source="measure.live:shop_events", source_args={"seed": 7})
    with SteadyGenerator(plan, workdir) as gen:   # spawns and waits until it is ready
        ...                                       # the system under test runs meanwhile
        report = gen.wait()                       # ScheduleReport
    report.valid, report.schedule_lag, report.probes

A *source* is ``"module:function"``; ``function(**source_args)`` returns a callable
``(i, due_epoch_s) -> Outgoing`` run inside the child (so it must be importable there).
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from infra.processes import stop_child
from measure.stats import summary

#: A run is invalid when its p99 schedule lag exceeds this (seconds) unless the plan says.
DEFAULT_MAX_LAG_S = 1.0
READY = "ready"


@dataclass(frozen=True)
class Outgoing:
    """One record to send. ``probe`` names a record whose acknowledgement is timed."""

    key: bytes | None
    value: bytes
    probe: str | None = None
    event_time: float | None = None  # epoch seconds, for event-time latency


@dataclass(frozen=True)
class SteadyPlan:
    """What to send, where, how fast and for how long (JSON-serialisable: it crosses processes)."""

    bootstrap_servers: str
    topic: str
    rate: float
    seconds: float
    source: str = "measure.live:shop_events"
    source_args: dict[str, Any] = field(default_factory=dict)
    max_schedule_lag_s: float = DEFAULT_MAX_LAG_S
    producer: dict[str, Any] = field(default_factory=dict)


@dataclass
class ScheduleReport:
    """What the generator did and whether it kept its schedule."""

    rate_target: float
    seconds_target: float
    started_at: float = 0.0  # epoch seconds of record 0's due time
    sent: int = 0
    acked: int = 0
    failed: int = 0
    seconds: float = 0.0
    schedule_lag: dict[str, float | int] | None = None
    lag_timeline: list[tuple[float, float]] = field(default_factory=list)
    probes: list[dict[str, Any]] = field(default_factory=list)
    max_schedule_lag_s: float = DEFAULT_MAX_LAG_S
    errors: list[str] = field(default_factory=list)

    @property
    def achieved_rate(self) -> float:
        """Records sent per second of the run."""
        return self.sent / self.seconds if self.seconds else 0.0

    @property
    def fell_behind(self) -> bool:
        """p99 schedule lag above the plan's limit, or records lost."""
        lag = self.schedule_lag or {}
        return float(lag.get("p99", 0.0)) > self.max_schedule_lag_s or self.failed > 0

    @property
    def valid(self) -> bool:
        """A run whose generator kept its schedule (else: invalid, not a result)."""
        return self.sent > 0 and not self.fell_behind

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready, with the derived verdicts."""
        return {
            **asdict(self),
            "achieved_rate": round(self.achieved_rate, 1),
            "fell_behind": self.fell_behind,
            "valid": self.valid,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ScheduleReport:
        """The report a child wrote."""
        names = set(cls.__dataclass_fields__)
        report = cls(**{k: v for k, v in data.items() if k in names})
        report.lag_timeline = [tuple(p) for p in report.lag_timeline]  # type: ignore[misc]
        return report


def load_source(plan: SteadyPlan) -> Callable[[int, float], Outgoing]:
    """Import ``module:function`` and build the per-record callable."""
    module, _, name = plan.source.partition(":")
    return getattr(importlib.import_module(module), name)(**plan.source_args)


def run_plan(plan: SteadyPlan, ready: Callable[[], None] = lambda: None) -> ScheduleReport:
    """Send ``plan`` on its schedule (in this process: the child's main loop)."""
    from kafka import KafkaProducer

    source = load_source(plan)
    producer = KafkaProducer(
        bootstrap_servers=plan.bootstrap_servers.split(","),
        acks="all",
        linger_ms=5,
        **plan.producer,
    )
    producer.partitions_for(plan.topic)  # metadata before the clock starts
    report = ScheduleReport(plan.rate, plan.seconds, max_schedule_lag_s=plan.max_schedule_lag_s)
    lags: list[float] = []
    probes: dict[str, dict[str, Any]] = {}

    def failed(error: BaseException) -> None:
        report.failed += 1
        if len(report.errors) < 20:
            report.errors.append(repr(error))

    ready()
    total = int(plan.rate * plan.seconds)
    start = time.time() + 0.2
    report.started_at = start
    next_sample = start
    for i in range(total):
        due = start + i / plan.rate
        now = time.time()
        if now < due:
            time.sleep(due - now)
            now = time.time()
        record = source(i, due)
        future = producer.send(plan.topic, key=record.key, value=record.value)
        sent = time.time()
        lag = max(0.0, now - due)
        lags.append(lag)
        if now >= next_sample:
            report.lag_timeline.append((round(now - start, 3), round(lag, 4)))
            next_sample = now + 1.0
        future.add_errback(failed)
        if record.probe is not None:
            probe = {"id": record.probe, "due": due, "sent": sent, "event_time": record.event_time}
            probes[record.probe] = probe
            future.add_callback(lambda _, p=probe: p.__setitem__("acked", time.time()))
        report.sent += 1
    producer.flush()
    report.seconds = time.time() - start
    producer.close()
    report.acked = report.sent - report.failed
    report.schedule_lag = summary(lags, digits=4)
    report.probes = list(probes.values())
    return report


class SteadyGenerator:
    """The generator as a child process (``python -m measure.generator``), from the caller."""

    def __init__(self, plan: SteadyPlan, workdir: Path, *, start_timeout_s: float = 60) -> None:
        self.plan = plan
        self.workdir = Path(workdir)
        self.start_timeout_s = start_timeout_s
        self._proc: subprocess.Popen[str] | None = None
        self._out = self.workdir / f"generator-{os.getpid()}-{time.monotonic_ns()}.json"

    @property
    def pid(self) -> int | None:
        """The child's PID (exclude it when sampling the system under test)."""
        return self._proc.pid if self._proc else None

    def start(self) -> SteadyGenerator:
        """Spawn the child and return once its producer is connected."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        plan_file = self._out.with_suffix(".plan.json")
        plan_file.write_text(json.dumps(asdict(self.plan)))
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "measure.generator", str(plan_file), str(self._out)],
            stdout=subprocess.PIPE,
            stderr=(self.workdir / "generator.log").open("a"),
            text=True,
        )
        assert self._proc.stdout is not None
        line = self._proc.stdout.readline().strip()  # blocks until ready (or the child died)
        if line != READY:
            self._proc.wait(timeout=self.start_timeout_s)
            raise RuntimeError(f"the generator did not start (see {self.workdir}/generator.log)")
        return self

    def wait(self, timeout: float | None = None) -> ScheduleReport:
        """Wait for the schedule to finish; the child's report."""
        if self._proc is None:
            raise RuntimeError("the generator was not started")
        limit = timeout if timeout is not None else self.plan.seconds * 3 + 120
        code = self._proc.wait(timeout=limit)
        if code != 0 or not self._out.exists():
            raise RuntimeError(f"the generator failed (exit {code}; {self.workdir}/generator.log)")
        return ScheduleReport.from_dict(json.loads(self._out.read_text()))

    def stop(self) -> None:
        """Stop the child if it still runs."""
        if self._proc:
            stop_child(self._proc, timeout_s=10)

    def __enter__(self) -> SteadyGenerator:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def main(argv: list[str]) -> int:
    """Child entry: ``python -m measure.generator PLAN.json OUT.json``."""
    plan = SteadyPlan(**json.loads(Path(argv[0]).read_text()))

    def ready() -> None:
        print(READY, flush=True)

    report = run_plan(plan, ready)
    Path(argv[1]).write_text(json.dumps(report.as_dict()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
