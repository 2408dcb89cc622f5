"""One reading of one design: lag, micro-batches, freshness, counts, serving source, marks.

Each part is read on its own and guarded: a broker that is down, a lane not created yet or
a view not published yet leaves that part empty with the reason, and the rest of the
reading stands. Nothing here writes.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql import types as T

from batch_layer import runs
from config.settings import Settings
from dashboard.record_times import RecordTimes
from designs.kappa.versions import existing_versions, lane_name, serving_version, switches
from designs.platform import Platform, build
from designs.status import lane_status
from lake.tables import Tables
from speed_layer import lane_log, progress
from speed_layer.lane import find_lane

#: Is the design's long-running speed process alive? (None: not known, judge by progress.)
Probe = Callable[[Settings], bool | None]

#: A lane with events waiting and no micro-batch for this long is shown as stopped.
STALE_AFTER_S = 30.0
VIEW_ROWS = 12
#: lane commits read for when each micro-batch was committed (30 of them, with upkeep)
COMMITS_READ = 100


def epoch_s(moment: datetime | None) -> float | None:
    """Epoch seconds of a timestamp the lake stores as naive UTC."""
    if moment is None:
        return None
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


def _plain(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat(timespec="seconds")
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return float(value)
    return value


def guarded(parts: dict[str, str], name: str, read: Callable[[], Any]) -> Any:
    """``read()``, or None with ``parts[name]`` saying why it could not be read."""
    try:
        value = read()
    except Exception as err:  # any failure is shown, the page keeps going
        parts[name] = f"down: {type(err).__name__}: {str(err).splitlines()[0][:200]}"
        return None
    parts.setdefault(name, "ok")
    return value


def lane_state(
    lane: dict[str, Any], last_finished: float | None, now: float, alive: bool | None
) -> str:
    """``running``, ``caught up``, ``stopped``...: from the process probe, else from progress.

    ``alive`` is None where no probe knows the process (a comparison's design runs its
    lane inside its own process): a lane with events waiting and no micro-batch for
    :data:`STALE_AFTER_S` is then taken as stopped.
    """
    if not lane.get("exists"):
        return "not started"
    if alive is False:
        return "stopped"
    if last_finished is None:
        return "starting" if alive else "no micro-batch yet"
    waiting = lane.get("total_lag") or 0
    if waiting and now - last_finished > STALE_AFTER_S:
        return "stuck" if alive else "stopped"
    return "running" if waiting else "caught up"


class Sampler:
    """Readings of one design; keeps what it learnt of record timestamps between readings."""

    def __init__(self, label: str, settings: Settings, probe: Probe | None = None) -> None:
        self.label = label
        self.settings = settings
        self.platform: Platform = build(settings)
        self.tables = Tables.of(settings)
        self.times = RecordTimes(settings, settings.kafka.events_topic)
        self.probe = probe

    def read(self, spark: SparkSession, view: str | None = None) -> dict[str, Any]:
        """Everything the page shows of this design, now."""
        now = datetime.now(UTC).timestamp()
        parts: dict[str, str] = {}
        source = guarded(parts, "serving", lambda: self.platform.serving_source(spark).description)
        run = guarded(parts, "batch layer", lambda: runs.latest_published(spark, self.tables))
        serving: dict[str, Any] = {
            "source": source,
            "batch_run": run.run_id if run else None,
        }
        marks = guarded(parts, "batch layer", lambda: self._batch_marks(spark)) or []
        names: list[tuple[str, int | None, bool]] = []
        if self.settings.mode == "kappa":
            kappa = guarded(parts, "kappa versions", lambda: self._kappa(spark)) or {}
            serving["version"] = kappa.get("serving")
            marks += kappa.get("marks", [])
            names = [
                (lane_name(v), v, v == kappa.get("serving")) for v in kappa.get("versions", [])
            ]
        else:
            names = [(self.platform.streaming_lane_name(spark), None, True)]
        alive = self.probe(self.settings) if self.probe else None
        lanes = []
        for name, version, serves in names:
            lane = self._lane(spark, name, version, serves, now, alive if serves else None, parts)
            lanes.append(lane)
            marks += lane.pop("marks")
            if serves:
                serving["epoch"] = lane.get("epoch")
                parts["speed layer"] = lane["state"]
        rows = guarded(parts, "view", lambda: self._view(spark, view)) if view else None
        return {
            "label": self.label,
            "mode": self.settings.mode,
            "at": now,
            "parts": parts,
            "serving": serving,
            "lanes": lanes,
            "marks": sorted(marks, key=lambda m: m["at"]),
            "view": rows,
            "views": self.platform.registry.names(),
        }

    def _batch_marks(self, spark: SparkSession) -> list[dict[str, Any]]:
        out = []
        for run in runs.history(spark, self.tables):
            if run.finished_at is not None and run.status == "published":
                out.append(
                    {
                        "at": epoch_s(run.finished_at),
                        "kind": "batch run",
                        "label": f"batch run {run.run_id} published",
                    }
                )
        return out

    def _kappa(self, spark: SparkSession) -> dict[str, Any]:
        marks = [
            {"at": epoch_s(s.at), "kind": "switch", "label": f"{s.action}: v{s.version} serves"}
            for s in switches(spark, self.tables)
        ]
        return {
            "serving": serving_version(spark, self.tables),
            "versions": existing_versions(spark, self.tables),
            "marks": marks,
        }

    def _lane(
        self,
        spark: SparkSession,
        name: str,
        version: int | None,
        serves: bool,
        now: float,
        alive: bool | None,
        parts: dict[str, str],
    ) -> dict[str, Any]:
        part = f"lane {name}"
        status = (
            guarded(parts, part, lambda: lane_status(spark, self.settings, name, sizes=False)) or {}
        )
        batches = guarded(parts, part, lambda: self._micro_batches(spark, name)) or []
        points = [b for b in batches if b["kind"] == progress.MICRO_BATCH]
        marks = [
            {"at": b["finished"], "kind": "rebase", "label": f"{name} rebased onto {b['epoch']}"}
            for b in batches
            if b["kind"] == progress.REBASE and b["finished"]
        ]
        last = points[-1]["finished"] if points else None
        return {
            "name": name,
            "version": version,
            "serving": serves,
            "exists": bool(status.get("exists")),
            "state": lane_state(status, last, now, alive) if status else "unknown",
            "epoch": status.get("epoch"),
            "lag": status.get("consumer_lag") or {},
            "total_lag": status.get("total_lag"),
            "late_rows": sum((status.get("late_rows") or {}).values()),
            "quarantined_rows": status.get("quarantined_rows"),
            "micro_batches": points,
            "marks": marks,
        }

    def _micro_batches(self, spark: SparkSession, name: str) -> list[dict[str, Any]]:
        lane = find_lane(spark, self.tables, name)
        if lane is None:
            return []
        out = []
        committed = lane_log.batch_commits(spark, lane, last=COMMITS_READ)
        for row in progress.history(spark, lane, last=30):
            # a micro-batch ends at its commit (a rebase's row is written by its commit)
            at = committed.get(row.batch_id) if row.kind == progress.MICRO_BATCH else None
            finished, started = at or epoch_s(row.finished_at), epoch_s(row.started_at)
            acked = [
                t
                for p, end in row.end_offsets.items()
                if end > row.start_offsets.get(p, 0)
                and (t := self.times.at(p, end - 1)) is not None
            ]
            out.append(
                {
                    "batch_id": row.batch_id,
                    "kind": row.kind,
                    "epoch": row.epoch,
                    "finished": finished,
                    "seconds": finished - started if finished and started else None,
                    "freshness_s": finished - max(acked) if finished and acked else None,
                    "rows": row.input_rows,
                }
            )
        return out

    def _view(self, spark: SparkSession, name: str) -> dict[str, Any]:
        frame = self.platform.read(spark, name)
        times = [f.name for f in frame.schema.fields if isinstance(f.dataType, T.TimestampType)]
        if times:
            frame = frame.orderBy(frame[times[0]].desc())
        rows = frame.limit(VIEW_ROWS).collect()
        return {
            "name": name,
            "columns": frame.columns,
            "rows": [[_plain(v) for v in r] for r in rows],
        }

    def close(self) -> None:
        """Close the broker connection."""
        self.times.close()
