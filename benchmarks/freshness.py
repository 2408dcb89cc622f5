"""Freshness: time from Kafka's acknowledgement of an event to its visibility.

One run, one broker; the contenders one after the other, each on topics of its own,
all fed by the same load generator (``measure.generator``): a process of its own that
sends ``--rate`` events/s for ``--seconds`` on a fixed schedule and reports how far it
fell behind it (a run whose generator fell behind is marked invalid). Every
``--probe-every``-th event is a probe: an ``add_to_cart`` by a user of its own.

* ``floor`` - the least any Spark + Delta speed layer pays on this machine
  (:mod:`compare.floor`: read, decode, idempotent append to one Delta table), in
  this process. A probe is visible when the micro-batch that carries it has committed.
* ``floor-tuned`` - the same with the engine's knobs set for latency (``TUNED``).
* ``floor-views`` - the views floor: the tuned floor that also de-duplicates (every id,
  as the contract requires) and whose commit carries each view's contribution, a
  joining view's with its partners from earlier micro-batches held in memory: the least
  any design serving these views right pays here. ``floor-views-alone``: the same with
  every view over its micro-batch alone (``conversions`` then misses its partners in
  earlier micro-batches), the views floor before 2026-12-01.
* ``lk`` / ``lk-tuned`` - ``lk speed`` (Lambda) and ``lk serve`` in subprocesses, with
  the default settings / the same knobs. ``lk-whole-reload``: ``lk`` with
  ``serving.merge_appends`` off (every lane commit reloads each view whole). A probe
  is visible when its cart line is in ``GET /views/cart_state`` over HTTP (polled
  every 50 ms with the last answer's ETag, so an unchanged view costs a ``304``, not
  thousands of rows); a second client asks a point query (one key) every 50 ms, whose
  first answer from a lane commit times serving without the whole view's rows.
* ``serving-floor`` - ``lk speed``'s lane served by the least any Spark server does to
  show a commit (:func:`run_serving_floor`): lk serve's commit-to-answer time over it
  says what serving adds beyond the engine's own cost. Not in the default run.

Reported per contender: p50/p95/p99/max of visible - acknowledged (and of visible -
due, which hides no queueing in the generator), the median micro-batch; lk's p99 over
the tuned floor's and over its own median micro-batch.

The figures cover the steady phase: probes due in the first ``--discard`` seconds
(default 120, as ShuffleBench does) are counted but left out of the percentiles. Per
``--slice`` seconds of the run (default 600) the same figures again, and the median
micro-batch and (lk) commit-to-answer time, to show whether a cost grows with the run:
``flat`` compares the last whole slice with the second.

Run: ``python -m benchmarks.freshness [--rate 5000] [--seconds 300] [--discard 120]
[--contenders ...]``; ``make bench-long`` runs the 90-minute comparison.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any, TypedDict

import httpx
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from benchmarks.recompute_vs_replay import isolated
from compare.floor import start_floor
from config.settings import Settings
from designs.lambda_arch.epochs import LAMBDA_LANE
from designs.platform import build
from event_log.topics import ensure_topics
from infra.local import free_ports
from lake import storage
from lake.source import StateTable, ViewNotReadyError
from lake.spark import build_session
from lake.tables import Tables
from measure.generator import ScheduleReport, SteadyGenerator, SteadyPlan
from measure.live import PROBE_BASE
from measure.machine import broker, bytes_kept, local_dir, machine
from measure.stats import summary
from speed_layer import lane_log, progress
from speed_layer.lane import find_lane, lane_root
from speed_layer.metrics import read_metrics
from views.registry import ViewRegistry, default_registry

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results" / "freshness.json"


class Knobs(TypedDict):
    """The engine's latency knobs: the trigger interval and Spark settings."""

    trigger_interval: str
    spark_conf: dict[str, str]


#: The knobs the engine offers for latency, applied to the tuned floor and to lk-tuned.
TUNED: Knobs = {
    "trigger_interval": "0 seconds",  # start the next micro-batch as soon as one ends
    "spark_conf": {
        # fewer Delta log checkpoints (a Spark job each) and no per-file statistics
        "spark.databricks.delta.properties.defaults.checkpointInterval": "100",
        "spark.databricks.delta.properties.defaults.dataSkippingNumIndexedCols": "0",
    },
}


def tuned(settings: Settings) -> Settings:
    """``settings`` with the ``TUNED`` knobs."""
    conf = {**settings.spark.conf, **TUNED["spark_conf"]}
    return settings.model_copy(
        update={
            "stream": settings.stream.model_copy(
                update={"trigger_interval": TUNED["trigger_interval"]}
            ),
            "spark": settings.spark.model_copy(update={"conf": conf}),
        }
    )


def plan_for(settings: Settings, args: argparse.Namespace) -> SteadyPlan:
    return SteadyPlan(
        settings.kafka.bootstrap_servers,
        settings.kafka.events_topic,
        rate=args.rate,
        seconds=args.seconds,
        source_args={"seed": 7, "probe_every": args.probe_every, "late_fraction": 0.0},
    )


def warm_up(settings: Settings, workdir: Path, visible: Callable[[], bool]) -> None:
    """Two probes at a low rate until the contender shows one: it runs before the clock does."""
    plan = SteadyPlan(
        settings.kafka.bootstrap_servers,
        settings.kafka.events_topic,
        rate=2,
        seconds=1,
        source_args={"seed": 1, "probe_every": 1, "probe_base": PROBE_BASE // 2},
    )
    with SteadyGenerator(plan, workdir) as generator:
        generator.wait()
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and not visible():
        time.sleep(0.5)


def send_and_drain(
    settings: Settings, args: argparse.Namespace, workdir: Path, seen: dict[int, float]
) -> ScheduleReport:
    """Run the generator's schedule, then wait (up to 3 min) until every probe was seen."""
    with SteadyGenerator(plan_for(settings, args), workdir) as generator:
        report = generator.wait()
    expected = {int(p["id"]) for p in report.probes}
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline and not expected <= seen.keys():
        time.sleep(0.5)
    return report


def slices(points: list[tuple[float, float]], start: float, slice_s: float) -> list[dict[str, Any]]:
    """``(when, value)`` points grouped by slice of the run: each slice's figures."""
    grouped: dict[int, list[float]] = {}
    for when, value in points:
        if when >= start:
            grouped.setdefault(int((when - start) // slice_s), []).append(value)
    return [
        {"from_minute": round(k * slice_s / 60), "to_minute": round((k + 1) * slice_s / 60)}
        | (summary(values, 2) or {})
        for k, values in sorted(grouped.items())
    ]


def flat(per_slice: list[dict[str, Any]], seconds: float, slice_s: float) -> dict[str, Any] | None:
    """The last whole slice's median over the second's (the first holds the warm-up)."""
    whole = [s for s in per_slice if s["to_minute"] * 60 <= seconds + 1]
    if len(whole) < 3:
        return None
    second, last = whole[1], whole[-1]
    return {
        "early": f"{second['from_minute']}-{second['to_minute']} min",
        "late": f"{last['from_minute']}-{last['to_minute']} min",
        "late_over_early_p50": round(last["p50"] / second["p50"], 2) if second["p50"] else None,
    }


def latencies(report: ScheduleReport, seen: dict[int, float], discard_s: float) -> dict[str, Any]:
    """Visibility percentiles of the steady phase from the probes and their first sighting.

    Probes due in the first ``discard_s`` seconds of the schedule are left out: the first
    loaded micro-batches compile code and build a backlog the rest of a run drains
    (``measuring.md``: report over the steady phase, say what is discarded).
    """
    acked = [p for p in report.probes if "acked" in p]
    steady = [p for p in acked if p["due"] - report.started_at >= discard_s]
    shown = [p for p in steady if int(p["id"]) in seen]
    return {
        "generator": {
            "sent": report.sent,
            "achieved_rate": round(report.achieved_rate),
            "schedule_lag_seconds": report.schedule_lag,
            "valid": report.valid,
        },
        "probes": len(acked),
        "discarded_seconds": discard_s,
        "probes_discarded": len(acked) - len(steady),
        "probes_seen": len(shown),
        "probes_unseen": len(steady) - len(shown),
        "probes_seen_of_all": sum(int(p["id"]) in seen for p in acked),
        "visibility_seconds": summary([seen[int(p["id"])] - p["acked"] for p in shown], 2),
        "visibility_from_due_seconds": summary([seen[int(p["id"])] - p["due"] for p in shown], 2),
    }


def over_time(
    result: dict[str, Any],
    report: ScheduleReport,
    seen: dict[int, float],
    series: dict[str, list[tuple[float, float]]],
    args: argparse.Namespace,
) -> None:
    """Add per-slice figures to ``result``: visibility, and each of ``series``."""
    shown = [
        (p["due"], seen[int(p["id"])] - p["acked"])
        for p in report.probes
        if "acked" in p and int(p["id"]) in seen
    ]
    every = {"visibility_seconds": shown, **series}
    per = {name: slices(points, report.started_at, args.slice) for name, points in every.items()}
    result["per_slice"] = per
    result["flat"] = {name: flat(s, args.seconds, args.slice) for name, s in per.items()}


def lk_env(settings: Settings, workdir: Path, more_env: Mapping[str, str]) -> dict[str, str]:
    """The environment of a contender's ``lk`` commands: the run's settings, then ``more_env``."""
    return {
        **os.environ,
        "LK_KAFKA__BOOTSTRAP_SERVERS": settings.kafka.bootstrap_servers,
        "LK_KAFKA__EVENTS_TOPIC": settings.kafka.events_topic,
        "LK_KAFKA__CATALOG_TOPIC": settings.kafka.catalog_topic,
        "LK_STORAGE__ROOT": settings.storage.root,
        "LK_STREAM__TRIGGER_INTERVAL": settings.stream.trigger_interval,
        "LK_SPARK__CONF": json.dumps(settings.spark.conf),
        "LK_WATCHDOG__HOME": str(workdir / "run"),
        **more_env,
    }


def start_lk(env: Mapping[str, str], workdir: Path, *commands: str) -> list[subprocess.Popen]:
    """Each ``lk`` command in a process of its own, its stderr in ``workdir``."""
    return [
        subprocess.Popen(
            [sys.executable, "-m", "lk.cli.app", command],
            cwd=REPO,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=(workdir / f"{command}.log").open("w"),
            start_new_session=True,  # its JVM in its group: a kill reaches both
        )
        for command in commands
    ]


def run_lk(
    settings: Settings,
    args: argparse.Namespace,
    workdir: Path,
    more_env: dict[str, str] | None = None,
) -> dict[str, Any]:
    """``lk speed`` + ``lk serve``; a probe is visible when the HTTP API returns its cart line.

    ``more_env``: settings of this contender's own (``LK_*``), after the run's.
    """
    port = free_ports(1)[0]
    env = lk_env(settings, workdir, {"LK_SERVING__PORT": str(port), **(more_env or {})})
    procs = start_lk(env, workdir, "speed", "serve")
    commits, stop_following = following(lane_log_path(settings))
    client = httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=5)
    seen: dict[int, float] = {}
    versions: dict[int, float] = {}  # the lane log's version -> when first served
    reloaded: dict[int, float] = {}  # the same -> when lk serve's reload of it ended
    pointed: dict[int, float] = {}  # the same, to a point query (one key: no rows to send)
    polls: list[tuple[float, int]] = []  # (seconds a GET took, rows it returned)
    point = httpx.Client(base_url=client.base_url, timeout=5)

    etag = {"If-None-Match": ""}  # the rows already looked at: answered 304 until they change

    def look() -> None:
        asked = time.time()
        try:
            reply = client.get("/views/cart_state", headers=etag)
        except httpx.HTTPError:
            return
        if reply.status_code not in (200, 304):
            return
        now = time.time()
        version = int(reply.headers["X-Table-Version"])
        versions.setdefault(version, now)
        if version not in reloaded:
            reloaded[version] = utc_epoch(reply.headers["X-Refreshed-At"])
        if reply.status_code == 304:
            return
        rows = reply.json()
        polls.append((now - asked, len(rows)))
        etag["If-None-Match"] = reply.headers["ETag"]
        for row in rows:
            if row["user_id"] >= PROBE_BASE // 2:
                seen.setdefault(row["user_id"], now)

    def visible() -> bool:
        look()
        return bool(seen)

    try:
        warm_up(settings, workdir, visible)
        stop = threading.Event()

        def watch() -> None:
            while not stop.is_set():
                look()
                time.sleep(0.05)

        def ask_one_key() -> None:
            while not stop.wait(0.05):
                try:
                    reply = point.get("/views/cart_state", params=POINT_QUERY)
                except httpx.HTTPError:
                    continue
                if reply.status_code == 200:
                    pointed.setdefault(int(reply.headers["X-Table-Version"]), time.time())

        def sample_storage() -> None:
            while not stop.is_set():
                kept.append((time.time(), stored(settings)))
                phases.append((time.time(), recent_phases(settings)))
                stop.wait(STORAGE_EVERY_S)

        kept: list[tuple[float, dict[str, int | None]]] = []
        phases: list[tuple[float, dict[str, float]]] = []
        threads = [
            threading.Thread(target=f, daemon=True) for f in (watch, ask_one_key, sample_storage)
        ]
        for thread in threads:
            thread.start()
        report = send_and_drain(settings, args, workdir, seen)
        stop.set()
        for thread in threads:
            thread.join()
        status = subprocess.run(
            [sys.executable, "-m", "lk.cli.app", "status", "--json"],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
        )
    finally:
        stop_following()
        stop_all(procs)
        client.close()
        point.close()
    result = served_lane(settings, args, report, seen, versions, commits, polls, pointed, reloaded)
    result["storage_over_time"] = [
        {"minute": round((when - report.started_at) / 60, 1), **sizes} for when, sizes in kept
    ]
    result["phases_over_time"] = [
        {"minute": round((when - report.started_at) / 60, 1), **medians}
        for when, medians in phases
        if medians
    ]
    try:
        streaming = json.loads(status.stdout)["streaming"]
        result["status_median_batch_seconds"] = streaming["median_batch_seconds"]
        result["median_phase_seconds"] = streaming["median_phase_seconds"]
        result["dedup_state"] = streaming.get("dedup_state")
    except (ValueError, KeyError, TypeError):
        result["status_error"] = status.stderr[-2000:]
    # micro-batch by micro-batch (the newest 50), to see a phase that grows with the run
    metrics = read_metrics(None, lane_root(Tables.of(settings), LAMBDA_LANE))
    if metrics is not None:
        result["phase_ms_per_micro_batch"] = metrics["recent_phase_ms"]
    return result


def lane_micro_batches(settings: Settings, commits: LaneCommits) -> list[tuple[float, float]]:
    """Each of the lane's micro-batches: (when it committed, seconds from its start to then).

    A progress row's ``finished_at`` is when the micro-batch's rows were ready, before
    the commit that holds them; the commit's own time is in the lane log, noted with
    the micro-batch it holds, as ``commits`` read it during the run.
    """
    spark = build_session(settings, app_name="lk-freshness-progress")
    try:
        lane = find_lane(spark, Tables.of(settings), LAMBDA_LANE)
        rows = progress.history(spark, lane) if lane else []
    finally:
        spark.stop()
    committed = commits.batches()
    return [
        (committed[r.batch_id], committed[r.batch_id] - start.replace(tzinfo=UTC).timestamp())
        for r in rows
        if r.kind == progress.MICRO_BATCH and (start := r.started_at) and r.batch_id in committed
    ]


#: A point query of ``cart_state`` (its whole key: one row at most), answered from the
#: served version: its first answer from a version times the reload alone, where the
#: watcher's GET of the whole view also renders and sends every row.
POINT_QUERY = {"user_id": "0", "product_id": "0"}

#: how often the lk contender's storage is measured (``storage_over_time``)
STORAGE_EVERY_S = 60.0


def stored(settings: Settings) -> dict[str, int | None]:
    """What the contender keeps on disk now: its Delta tables, its checkpoints, its log.

    ``delta_bytes`` and ``checkpoint_bytes`` as ``lk compare`` counts them
    (:func:`measure.machine.bytes_kept`); ``log_commit_files``: every file in the lane log's
    ``_delta_log`` (each commit's JSON and checksum, the checkpoints), which Delta
    deletes only a day at a time (``lane_log.properties``). ``log_read_bytes`` and
    ``log_stored_bytes``: the lane log's current version and everything it keeps, as the
    lane last measured them (``log_size`` in its metrics; None before it did): the
    first is the views' own state, the difference what retention and VACUUM bound.
    """
    kept = bytes_kept(local_dir(settings.storage.uri()))
    commits = lane_log_path(settings) / "_delta_log"
    size = (read_metrics(None, lane_root(Tables.of(settings), LAMBDA_LANE)) or {}).get("log_size")
    return {
        "delta_bytes": kept["delta_tables"],
        "checkpoint_bytes": kept["checkpoints"],
        "log_commit_files": sum(1 for _ in commits.iterdir()) if commits.is_dir() else 0,
        "log_read_bytes": size["bytes"] if size else None,
        "log_stored_bytes": size["stored_bytes"] if size else None,
    }


STOP_WAIT_S = 60


def stop_all(procs: list[subprocess.Popen]) -> None:
    """Stop the contender's processes: asked first, killed after :data:`STOP_WAIT_S`.

    A process slow to stop (a JVM in garbage collections) must not cost the run its
    figures: they are measured already, and written after this.
    """
    for proc in procs:
        proc.terminate()
    for proc in procs:
        try:
            proc.wait(timeout=STOP_WAIT_S)
        except subprocess.TimeoutExpired:
            print(f"{proc.args!r} did not stop in {STOP_WAIT_S} s: killed", file=sys.stderr)
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def recent_phases(settings: Settings) -> dict[str, float]:
    """The median and the longest seconds of each phase over the lane's recent micro-batches.

    From its metrics. Sampled every minute, it shows which phase grows over a long run
    (the result file's last 50 micro-batches only show its end); the longest shows what
    runs in a few micro-batches only (``maintain``: a compaction every
    ``stream.compact_every``). Empty before the lane reported any.
    """
    metrics = read_metrics(None, lane_root(Tables.of(settings), LAMBDA_LANE)) or {}
    recent = metrics.get("recent_phase_ms") or []
    names = sorted({name for phases in recent for name in phases})
    medians = {n: statistics.median(p.get(n) or 0 for p in recent) / 1000 for n in names}
    longest = {f"{n}_max": max(p.get(n) or 0 for p in recent) / 1000 for n in names}
    return {name: round(seconds, 2) for name, seconds in {**medians, **longest}.items()}


#: parts of a setting's name that say its value is a secret, kept out of result files
SECRET_WORDS = ("SECRET", "PASSWORD", "TOKEN", "KEY")


def settings_from_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The ``LK_*`` settings every contender took from the environment, secrets masked.

    A run with settings other than the defaults says so in its result file.
    """
    return {
        name: "***" if any(word in name.upper() for word in SECRET_WORDS) else value
        for name, value in sorted(environ.items())
        if name.startswith("LK_")
    }


def lane_log_path(settings: Settings) -> Path:
    """Where the Lambda lane keeps its log on this machine (the benchmark runs locally)."""
    uri = f"{lane_root(Tables.of(settings), LAMBDA_LANE)}/log"
    path = storage.local_path(uri)
    if path is None:
        raise ValueError(f"the freshness benchmark reads the lane's log locally, not {uri}")
    return Path(path)


#: how often :class:`LaneCommits` reads the lane log's new commit files: well within the
#: shortest log retention a run sets (10 minutes)
COMMITS_EVERY_S = 30.0


class LaneCommits:
    """The lane log's commits as they appear: version -> (when made, the micro-batch held).

    Read from its ``_delta_log`` while the run goes on (:meth:`follow`), not only at its
    end: at a checkpoint Delta deletes the commit files older than the log retention
    (``stream.log_retention``) rounded down to the start of its day, so a run that
    crosses midnight UTC loses its first commits, and with them when they were made.
    """

    def __init__(self, log: Path) -> None:
        self.log = log
        self.made: dict[int, tuple[float, int | None]] = {}

    def read_new(self) -> None:
        """Note the commits not seen yet (a file deleted since it was listed is skipped)."""
        for commit in (self.log / "_delta_log").glob("*.json"):
            version = int(commit.stem)
            if version in self.made:
                continue
            try:
                lines = commit.read_text().splitlines()
            except FileNotFoundError:
                continue
            for line in lines:
                info = json.loads(line).get("commitInfo")
                if info is not None:
                    batch = lane_log.noted_batch(info.get("userMetadata"))
                    self.made[version] = (info["timestamp"] / 1000, batch)

    def follow(self, stop: threading.Event, every_s: float = COMMITS_EVERY_S) -> None:
        """Read new commits every ``every_s`` until ``stop``, then once more."""
        while not stop.wait(every_s):
            self.read_new()
        self.read_new()

    def times(self) -> dict[int, float]:
        """Version -> when it was committed (epoch s)."""
        return {version: at for version, (at, _) in self.made.items()}

    def batches(self) -> dict[int, float]:
        """Micro-batch id -> when the commit that holds it was made.

        A micro-batch undone by a recovery and run again is noted twice: the later
        commit is the one that stands (:func:`speed_layer.lane_log.batch_commits`).
        """
        return {batch: at for _, (at, batch) in sorted(self.made.items()) if batch is not None}


def following(log: Path) -> tuple[LaneCommits, Callable[[], None]]:
    """A :class:`LaneCommits` of ``log`` read in a thread of its own, and how to stop it."""
    commits, stop = LaneCommits(log), threading.Event()
    thread = threading.Thread(target=commits.follow, args=(stop,), daemon=True)
    thread.start()

    def done() -> None:
        stop.set()
        thread.join()

    return commits, done


def served_lane(
    settings: Settings,
    args: argparse.Namespace,
    report: ScheduleReport,
    seen: dict[int, float],
    shown: dict[int, float],
    commits: LaneCommits,
    polls: list[tuple[float, int]],
    pointed: dict[int, float] | None = None,
    reloaded: dict[int, float] | None = None,
) -> dict[str, Any]:
    """The figures of a contender that serves ``lk speed``'s lane (lk, the serving floor).

    Visibility of the probes; from each lane commit (``commits``, read during the run)
    to when it was ``shown`` (the lane log's version -> when first served), over the
    steady phase and per slice; the lane's micro-batches per slice; ``polls`` of the
    view, the later half of them (a watcher's GETs: none for the floor). ``pointed``:
    when each version first answered a point query (:data:`POINT_QUERY`; lk only).
    ``reloaded``: when ``lk serve``'s reload of each version ended (lk only).
    """
    result = latencies(report, seen, args.discard)
    steady_from = report.started_at + args.discard
    committed = commits.times()
    result["serving"] = serving_split(
        committed,
        {v: t for v, t in shown.items() if t >= steady_from},
        polls[len(polls) // 2 :],
        reloaded,
    )
    point: dict[str, list[tuple[float, float]]] = {}
    if pointed is not None:
        result["serving_point_query"] = serving_split(
            committed, {v: t for v, t in pointed.items() if t >= steady_from}, []
        )
        point["commit_to_point_answer_seconds"] = [
            (committed[v], t - committed[v]) for v, t in pointed.items() if v in committed
        ]
    micro_batches = lane_micro_batches(settings, commits)
    steady = [seconds for when, seconds in micro_batches if when >= steady_from]
    result["median_micro_batch_seconds"] = round(statistics.median(steady), 2) if steady else None
    over_time(
        result,
        report,
        seen,
        {
            "micro_batch_seconds": micro_batches,
            "commit_to_served_seconds": [
                (committed[v], t - committed[v]) for v, t in shown.items() if v in committed
            ],
            **point,
        },
        args,
    )
    return result


def serving_split(
    committed: dict[int, float],
    versions: dict[int, float],
    polls: list[tuple[float, int]],
    reloaded: dict[int, float] | None = None,
) -> dict[str, Any]:
    """How long ``lk serve`` took to show each lane commit, and what a watcher's GET cost.

    A version's lag is from the lane's Delta commit (``committed``: version -> when) to
    the first GET that answered from it: the refresher's wait for its next check, the
    reload (a Spark job), and the poll. Versions the refresher skipped (a newer one came
    before it reloaded) are not counted. With ``reloaded`` (version -> when the reload
    ended, the snapshot's ``X-Refreshed-At``) the lag is cut in two there: the wait and
    the reload, then the publish and the watcher's poll and GET.
    """
    lags = [seen - committed[v] for v, seen in versions.items() if v in committed]
    split: dict[str, Any] = {
        "versions_served": len(lags),
        "versions_committed": sum(v >= min(versions, default=0) for v in committed),
        "commit_to_served_seconds": summary(lags, 2),
        "watcher_get_seconds": summary([p[0] for p in polls], 3),
        "watcher_rows_per_get": statistics.median(p[1] for p in polls) if polls else None,
    }
    if reloaded is not None:
        both = [v for v in versions if v in committed and v in reloaded]
        split["commit_to_reloaded_seconds"] = summary([reloaded[v] - committed[v] for v in both], 2)
        split["reloaded_to_served_seconds"] = summary([versions[v] - reloaded[v] for v in both], 2)
    return split


def utc_epoch(stamp: str) -> float:
    """Epoch seconds of a time ``lk serve`` sends (ISO 8601, UTC: ``...T01:10:00.125Z``)."""
    return datetime.fromisoformat(stamp).replace(tzinfo=UTC).timestamp()


def run_floor(
    settings: Settings,
    args: argparse.Namespace,
    workdir: Path,
    views: ViewRegistry | None = None,
    join_context: bool = True,
) -> dict[str, Any]:
    """The floor query (:mod:`compare.floor`); a probe is visible once committed."""
    spark = build_session(settings, app_name="lk-freshness-floor")
    seen: dict[int, float] = {}

    def note(batch: DataFrame, _: int, committed: float) -> None:
        probes = batch.where(
            (F.col("event_type") == "add_to_cart") & (F.col("user_id") >= PROBE_BASE // 2)
        ).select("user_id")
        for row in probes.collect():
            seen.setdefault(row.user_id, committed)

    query, durations = start_floor(
        spark, settings, note, views, deduplicate=views is not None, join_context=join_context
    )
    try:
        warm_up(settings, workdir, lambda: bool(seen))
        durations.clear()
        report = send_and_drain(settings, args, workdir, seen)
    finally:
        query.stop()
        spark.stop()
    result = latencies(report, seen, args.discard)
    result["median_micro_batch_seconds"] = (
        round(statistics.median(d for _, d in durations), 2) if durations else None
    )
    over_time(result, report, seen, {"micro_batch_seconds": durations}, args)
    return result


def run_floor_views(
    settings: Settings, args: argparse.Namespace, workdir: Path, join_context: bool = True
) -> dict[str, Any]:
    """The views floor: de-duplicated, and its commit carries every view's contribution.

    ``join_context``: a joining view meets its partners from earlier micro-batches
    (``floor-views``); without, every view over its micro-batch alone
    (``floor-views-alone``, the views floor before 2026-12-01).
    """
    return run_floor(settings, args, workdir, default_registry(), join_context)


def run_serving_floor(
    settings: Settings, args: argparse.Namespace, workdir: Path
) -> dict[str, Any]:
    """``lk speed``, and beside it the least any Spark server does to show a lane commit.

    In place of ``lk serve``, in this process, on a session of its own built as ``lk
    serve`` builds its: every ``serving.refresh_interval`` it probes the version of the
    lane's log; for a new one, one Spark job over only what the commits since appended
    to ``cart_state`` (the view whole when they did more than append, as ``lk serve``
    reads it): the rows grouped on the view's key, collected. No merge onto the view's
    earlier state, no presentation, no HTTP: a floor under any server of these views that
    answers from Spark. A commit is shown when that job returned; a probe is visible when
    the job returned its cart line.
    """
    platform = build(settings)
    view = platform.registry.get("cart_state")
    spark = build_session(settings, app_name="lk-serving-floor")
    interval = settings.serving.refresh_interval.total_seconds()
    seen: dict[int, float] = {}
    shown: dict[int, float] = {}  # the lane log's version -> when its job returned
    errors: list[str] = []
    stop = threading.Event()

    def serve() -> None:
        found: tuple[StateTable, StructType] | None = None  # the view's part, its rows' fields
        last: int | None = None
        while not stop.wait(interval):
            try:
                if found is None:
                    table = platform.serving_source(spark).tables[view.name]
                    found = table, table.read(spark).schema
                table, fields = found
                version = storage.delta_version(spark, table.path)
                if version is None or version == last:
                    continue
                files = None if last is None else table.appended_files(spark, last, version)
                rows = []
                if files != []:  # a commit that added nothing to the view shows at once
                    read = (
                        table.read_files(spark, files, fields)
                        if files
                        else table.read(spark, version)
                    )
                    rows = read.groupBy(*view.key).count().collect()
                returned = time.time()
                for row in rows:
                    if row.user_id >= PROBE_BASE // 2:
                        seen.setdefault(row.user_id, returned)
                shown.setdefault(version, returned)
                last = version
            except ViewNotReadyError:
                continue
            except Exception as error:  # counted in the result; the next look tries again
                errors.append(str(error).splitlines()[0])

    procs = start_lk(lk_env(settings, workdir, {}), workdir, "speed")
    commits, stop_following = following(lane_log_path(settings))
    server = threading.Thread(target=serve, daemon=True)
    server.start()
    try:
        warm_up(settings, workdir, lambda: bool(seen))
        errors.clear()  # before the lane made its log, a look fails
        report = send_and_drain(settings, args, workdir, seen)
    finally:
        stop.set()
        server.join()
        stop_following()
        stop_all(procs)
        spark.stop()
    result = served_lane(settings, args, report, seen, shown, commits, [])
    result["serving"]["errors"] = errors[:20]
    return result


Contender = Callable[[Settings, argparse.Namespace, Path], dict[str, Any]]
#: name -> how it runs, and whether the ``TUNED`` knobs apply
CONTENDERS: dict[str, tuple[Contender, bool]] = {
    "floor": (run_floor, False),
    "floor-tuned": (run_floor, True),
    "floor-views": (run_floor_views, True),
    "floor-views-alone": (partial(run_floor_views, join_context=False), True),
    "lk": (run_lk, False),
    "lk-tuned": (run_lk, True),
    # lk as it served before merge_appends: every lane commit reloads each view whole
    "lk-whole-reload": (partial(run_lk, more_env={"LK_SERVING__MERGE_APPENDS": "false"}), False),
    # lk's lane, served by one Spark job per commit over what it appended
    "serving-floor": (run_serving_floor, False),
}


def showed_every_probe(result: dict[str, Any]) -> bool:
    """Whether a contender showed every probe of the measured phase (none left unseen)."""
    return not result.get("probes_unseen")


def ratios(results: dict[str, Any]) -> dict[str, float]:
    """lk's p99 against the floors' and against its own median micro-batch.

    Only contenders that showed every probe of the measured phase take part: one that
    stopped showing them (fell behind for good, or stalled) has percentiles over the
    probes it reached in time, which flatter it, so no ratio is made of them.
    """
    p99 = {
        name: r["visibility_seconds"]["p99"]
        for name, r in results.items()
        if r.get("visibility_seconds") and showed_every_probe(r)
    }
    floor_serving = (results.get("serving-floor") or {}).get("serving") or {}
    floor_served = floor_serving.get("commit_to_served_seconds")
    out: dict[str, float] = {}
    for lk in ("lk", "lk-tuned", "lk-whole-reload"):
        if lk not in p99:
            continue
        for floor in ("floor", "floor-tuned", "floor-views", "floor-views-alone"):
            if floor in p99:
                out[f"{lk}_p99_over_{floor}_p99"] = round(p99[lk] / p99[floor], 2)
        served = (results[lk].get("serving") or {}).get("commit_to_served_seconds")
        if served and floor_served:
            for q in ("p50", "p99"):
                out[f"{lk}_commit_to_served_{q}_over_serving_floor"] = round(
                    served[q] / floor_served[q], 2
                )
        median = results[lk].get("median_micro_batch_seconds")
        if median:
            out[f"{lk}_p99_over_median_micro_batch"] = round(p99[lk] / median, 2)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=int, default=5_000)
    parser.add_argument("--seconds", type=int, default=300)
    parser.add_argument(
        "--discard", type=float, default=120, help="seconds of warm-up left out of the figures"
    )
    parser.add_argument("--probe-every", type=int, default=500)
    parser.add_argument(
        "--slice", type=float, default=600, help="seconds per slice of the per-slice figures"
    )
    parser.add_argument(
        "--contenders",
        nargs="+",
        choices=list(CONTENDERS),
        default=[
            name
            for name in CONTENDERS
            if name not in ("lk-whole-reload", "serving-floor", "floor-views-alone")
        ],
    )
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args()
    with (
        tempfile.TemporaryDirectory(prefix="lk-fresh-") as tmp,
        broker(None, Path(tmp) / "kafka") as base,
    ):
        info = machine(base)
        results: dict[str, Any] = {}
        for name in args.contenders:
            run, knobs = CONTENDERS[name]
            settings = isolated(base, name.replace("-", "_"), Path(tmp))
            settings = tuned(settings) if knobs else settings
            ensure_topics(settings)
            workdir = Path(tmp) / f"work-{name}"
            workdir.mkdir()
            results[name] = run(settings, args, workdir)
            print(name, json.dumps(results[name]), flush=True)
    report: dict[str, Any] = {
        "benchmark": "freshness",
        "machine": info,
        "rate_target": args.rate,
        "seconds": args.seconds,
        "discarded_seconds": args.discard,
        "slice_seconds": args.slice,
        "order": args.contenders,
        "default_trigger_interval": base.stream.trigger_interval,
        "settings_from_env": settings_from_env(os.environ),
        "tuned": TUNED,
        "valid": all(r["generator"]["valid"] for r in results.values()),
        "showed_every_probe": {name: showed_every_probe(r) for name, r in results.items()},
        "contenders": results,
        "ratios": ratios(results),
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2))
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
