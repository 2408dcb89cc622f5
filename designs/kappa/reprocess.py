"""Reprocessing, as Jay Kreps described it: replay the retained log into a new version.

``reprocess`` starts version ``n+1`` from offset 0 with the current view settings while
version ``n`` keeps serving; once ``n+1`` has caught up with the log end it switches
readers in one atomic pointer write and saves a per-view diff. ``rollback`` points back
to the previous version; ``drop`` deletes a version that no longer serves.

A reprocess killed before its switch leaves a version that never served. The next
``reprocess`` resumes it from its checkpoint (a replay killed at 90% does not start
over) if it froze the same view settings; otherwise it drops it and names it. A replay
is called complete only if it started at offset 0 of every partition and reached the
log end: retention that deleted history under it is refused, not served.

One reprocess is five steps, and both routes run the same ones: ``lk kappa reprocess``
calls them in a row (:func:`reprocess`); the ``kappa_reprocess`` DAG runs them as tasks
(``lk.tasks``), the replay detached (``lk kappa build``) while a sensor waits:

1. :func:`begin`: the log is complete; resume the unfinished version or open the next;
2. :func:`replay_version`: replay the log into it, up to the log end;
3. :func:`check_replay_complete`: it started at offset 0, reached the end, dropped none;
4. :func:`~designs.kappa.gate.validate_version`: Great Expectations over every view;
5. :func:`switch`: move the pointer, then save the diff against the version it replaced.

A version that fails 3 or 4 never serves and stays unfinished (the next reprocess with
the same view settings resumes it, and refuses it again until the data or views change).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import SparkSession

from config.settings import Settings
from designs.kappa.diff import diff_versions
from designs.kappa.gate import validate_version
from designs.kappa.versions import (
    EPOCH,
    KappaError,
    existing_versions,
    lane_name,
    open_version,
    point_to,
    publish_alerts,
    serving_version,
    switches,
    version_settings,
)
from event_log.topics import end_offsets, start_offsets
from lake import storage
from lake.offsets import reaches
from lake.tables import Tables
from measure.laps import Laps
from quality import warm_up
from speed_layer.checkpoint import committed_ends, first_offsets
from speed_layer.epoch import Epoch
from speed_layer.lane import Lane, lane_root
from speed_layer.metrics import read_metrics, watermark_drops
from speed_layer.stream import LaneRun, run_lane
from views.registry import ViewRegistry

log = logging.getLogger(__name__)


class TruncatedLogError(KappaError):
    """The retained log no longer starts at offset 0: a replay would silently lose history."""


class DroppedEventsError(KappaError):
    """A replay dropped records behind a watermark: the version lacks events, never serves."""


@dataclass(frozen=True)
class ReprocessResult:
    """What a reprocess did (``resumed``: it finished a killed one; ``abandoned``: dropped).

    ``steps``: seconds per step (``replay``: from step 1 to a caught-up version;
    ``gate``: its completeness and quality checks; ``switch``: the pointer, the alerts,
    then the diff), so the replay can be held against other ways to compute the views.
    """

    version: int
    previous: int | None
    offsets: int
    seconds: float
    diff: dict[str, dict[str, int]]
    resumed: bool = False
    abandoned: tuple[int, ...] = ()
    steps: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class ReprocessPlan:
    """What one reprocess builds (step 1's answer, which every later step is handed).

    Attributes:
        version: the version it replays into.
        previous: the version serving when it began (None: the first).
        target: per partition, the log end it must reach.
        resumed: it finishes a version a killed reprocess left.
        abandoned: unfinished versions it dropped (other view settings).
    """

    version: int
    previous: int | None
    target: dict[int, int]
    resumed: bool = False
    abandoned: tuple[int, ...] = ()

    @property
    def offsets(self) -> int:
        """How many offsets the replay covers."""
        return sum(self.target.values())

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready (an Airflow task hands it to the next one as XCom)."""
        return {
            "version": self.version,
            "previous": self.previous,
            "target": {str(p): o for p, o in self.target.items()},
            "resumed": self.resumed,
            "abandoned": list(self.abandoned),
        }

    @classmethod
    def of(cls, data: dict[str, Any]) -> ReprocessPlan:
        """The plan :meth:`as_dict` wrote."""
        return cls(
            int(data["version"]),
            data["previous"],
            {int(p): int(o) for p, o in data["target"].items()},
            bool(data["resumed"]),
            tuple(data["abandoned"]),
        )


def unfinished_versions(spark: SparkSession, tables: Tables) -> list[int]:
    """Versions on storage that never served: reprocesses killed before their switch."""
    served = {s.version for s in switches(spark, tables)}
    return [v for v in existing_versions(spark, tables) if v not in served]


def _next_version(spark: SparkSession, settings: Settings) -> tuple[int, bool, list[int]]:
    """``(version, resumed, abandoned)`` of the next reprocess.

    It resumes the newest unfinished version with the same view settings, and drops the
    other unfinished ones; with none to resume it starts ``max + 1``.
    """
    tables = Tables.of(settings)
    pending = unfinished_versions(spark, tables)
    same = [
        v
        for v in pending
        if version_settings(settings, open_version(spark, settings, v)).views == settings.views
    ]
    version = max(same) if same else max(existing_versions(spark, tables), default=0) + 1
    abandoned = [v for v in pending if v != version]
    for v in abandoned:
        log.warning("dropping unfinished v%d: its view settings differ from this reprocess", v)
        drop(spark, settings, v)
    return version, bool(same), abandoned


def check_replay_complete(
    spark: SparkSession, settings: Settings, lane: Lane, target: dict[int, int]
) -> None:
    """Refuse a replay that did not start at offset 0 or did not reach ``target``.

    A start above 0 means retention (or a delete) removed history between the check at
    start and the first micro-batch: the version lacks events and must not serve. So
    does a replay whose de-duplication dropped records behind its watermark. Both ends
    come from Spark's checkpoint, read as files (the lane's progress rows say the same,
    through a Spark query).
    """
    started = first_offsets(spark, lane)
    skipped = {p: o for p, o in started.items() if o > 0}
    if skipped:
        detail = ", ".join(f"partition {p} from offset {o}" for p, o in sorted(skipped.items()))
        raise TruncatedLogError(
            f"{lane.name} replayed {settings.kafka.events_topic!r} starting at {detail}: "
            "offsets below were deleted before it read them; not calling it complete"
        )
    reached = committed_ends(spark, lane)
    if not reaches(reached, target):
        raise KappaError(f"{lane.name} stopped before the log end: {reached} < {target}")
    dropped = watermark_drops(read_metrics(spark, lane.root))
    if dropped:
        raise DroppedEventsError(
            f"{lane.name} dropped {dropped} records behind its de-duplication watermark "
            "(stream.dedup_horizon is set and the log's partitions diverge by more in Kafka "
            "time); not calling it complete. Unset stream.dedup_horizon and reprocess."
        )


def begin(spark: SparkSession, settings: Settings) -> ReprocessPlan:
    """Step 1: refuse a truncated log, then resume the unfinished version or open the next.

    The version is created with ``settings.views`` frozen into it (a resumed one froze
    the same).
    """
    target = check_log_complete(settings)
    previous = serving_version(spark, Tables.of(settings))
    version, resumed, abandoned = _next_version(spark, settings)
    if resumed:
        log.info("resuming unfinished v%d from its checkpoint", version)
    open_version(spark, settings, version)
    return ReprocessPlan(version, previous, target, resumed, tuple(abandoned))


def check_complete(spark: SparkSession, settings: Settings, plan: ReprocessPlan) -> None:
    """Step 3: :func:`check_replay_complete` for the plan's version and log end."""
    lane = open_version(spark, settings, plan.version)
    check_replay_complete(spark, settings, lane, plan.target)


def switch(
    spark: SparkSession, settings: Settings, plan: ReprocessPlan, registry: ViewRegistry
) -> dict[str, dict[str, int]]:
    """Step 5: move the pointer, alert, then save the per-view diff against the previous version.

    The previous version stays on storage (``rollback`` returns to it). The alerts topic
    then says what the new version serves (bursts it adds opened, bursts it drops
    retracted, the same bursts nothing). The diff comes last: it tells whoever switched
    what readers were given instead, and changes nothing they are given, so readers do
    not wait for it: it merges and joins every view of both versions (a 2,000-event
    reprocess's switch took 3.1 s with no version to diff against and 11.3 s with one;
    at 1M, 4.1 and 29.5 s). A diff that fails then is logged, not raised: the switch
    happened, and a retried task would publish the version again. Returns the diff
    (empty when nothing was diffed).
    """
    tables = Tables.of(settings)
    version, previous = plan.version, plan.previous
    note = f"replayed {plan.offsets} offsets; previous v{previous}" if previous else "first"
    point_to(spark, tables, version, "publish", note=note)
    publish_alerts(spark, settings, registry)
    if previous is None:
        return {}
    try:
        diff = diff_versions(spark, settings, previous, version, registry)
    except Exception as error:  # readers already moved: the switch stands, said loudly
        log.warning("v%d serves; its diff against v%d was not saved: %s", version, previous, error)
        return {}
    storage.write_text(
        spark,
        tables.path("kappa", "diffs", f"v{previous}_v{version}.json"),
        json.dumps(diff, indent=2),
    )
    return diff


def kappa_epoch() -> Epoch:
    """Kappa lanes have one epoch and no base: the streaming code computes everything."""
    return Epoch(EPOCH, {}, lambda view: None, keeps_history=False)


def check_log_complete(settings: Settings) -> dict[int, int]:
    """Refuse to replay a truncated log; return its end offsets otherwise."""
    topic = settings.kafka.events_topic
    starts = start_offsets(settings, topic)
    truncated = {p: o for p, o in starts.items() if o > 0}
    if truncated:
        detail = ", ".join(
            f"partition {p} starts at offset {o}" for p, o in sorted(truncated.items())
        )
        raise TruncatedLogError(
            f"the log of {topic!r} is truncated ({detail}): retention or a delete removed "
            "history, so a replay would not see every event; refusing to reprocess"
        )
    return end_offsets(settings, topic)


def run_version(
    spark: SparkSession,
    settings: Settings,
    lane: Lane,
    registry: ViewRegistry,
    *,
    until_caught_up: bool,
    on_progress: Callable[[dict], None] | None = None,
) -> LaneRun:
    """Run one version's lane with the view settings frozen into it."""
    return run_lane(
        spark,
        version_settings(settings, lane),
        lane,
        registry,
        kappa_epoch,
        until_caught_up=until_caught_up,
        on_progress=on_progress,
    )


def replaying(settings: Settings, remaining: dict[int, int] | None = None) -> Settings:
    """Settings for a replay: micro-batches of about ``stream.replay_max_offsets_per_trigger``.

    A replay catches up on history nobody is waiting for, so fewer and larger
    micro-batches pay the fixed cost of one (plans, Delta commits) less often. Given the
    offsets still to read per partition (``remaining``), it splits them into equal
    micro-batches, as many as their sum over the cap rounds to (so at most 1.5 caps
    each): 1.015M offsets at a 1M cap make one micro-batch, not one of 1M and a tail of
    15k that pays a whole micro-batch's fixed cost (7-8 s here). Spark shares the cap
    between partitions rounding each share down, hence one offset per partition spare.
    """
    cap = settings.stream.replay_max_offsets_per_trigger
    if offsets := sum((remaining or {}).values()):
        cap = -(-offsets // max(1, round(offsets / cap))) + len(remaining or {})
    stream = settings.stream.model_copy(update={"max_offsets_per_trigger": cap})
    return settings.model_copy(update={"stream": stream})


def replay_version(
    spark: SparkSession,
    settings: Settings,
    lane: Lane,
    registry: ViewRegistry,
    target: dict[int, int],
    on_progress: Callable[[dict], None] | None = None,
) -> LaneRun:
    """Replay the log into a version's lane (new, or resumed) up to ``target``."""
    done = committed_ends(spark, lane)
    remaining = {p: max(0, end - done.get(p, 0)) for p, end in target.items()}
    return run_version(
        spark,
        replaying(settings, remaining),
        lane,
        registry,
        until_caught_up=True,
        on_progress=on_progress,
    )


def reprocess(
    spark: SparkSession,
    settings: Settings,
    registry: ViewRegistry,
    *,
    on_progress: Callable[[int, int], None] | None = None,
    before_switch: Callable[[int], None] | None = None,
) -> ReprocessResult:
    """Build the next version from offset 0, check and validate it, then switch readers.

    The five steps of the module docstring in a row, in this process.

    Args:
        spark: the session.
        settings: settings whose view parameters the new version freezes.
        registry: the views to build.
        on_progress: ``(offsets processed, offsets to process)`` after each micro-batch.
        before_switch: called with the new version once it has caught up and passed its
            checks, just before the switch (tests query the old version there).

    Raises:
        TruncatedLogError: the log, or the replay, does not start at offset 0.
        DroppedEventsError: the replay dropped records behind a watermark.
        QualityError: a view of the new version failed its checks; the old one serves.
    """
    started = time.perf_counter()
    lap = Laps()
    plan = begin(spark, settings)
    lane = open_version(spark, settings, plan.version)

    def report(metrics: dict) -> None:
        if on_progress:
            ends: dict[str, int] = next(iter((metrics.get("end_offsets") or {}).values()), {})
            on_progress(sum(int(o) for o in ends.values()), plan.offsets)

    warm_up()  # Great Expectations' first use in a process, beside the replay's Spark jobs
    replay_version(spark, settings, lane, registry, plan.target, on_progress=report)
    lap("replay")
    check_complete(spark, settings, plan)
    validate_version(spark, settings, plan.version, registry)
    lap("gate")
    if before_switch:
        before_switch(plan.version)
    diff = switch(spark, settings, plan, registry)
    lap("switch")
    return ReprocessResult(
        plan.version,
        plan.previous,
        plan.offsets,
        time.perf_counter() - started,
        diff,
        resumed=plan.resumed,
        abandoned=plan.abandoned,
        steps=lap.seconds(),
    )


def rollback(spark: SparkSession, settings: Settings, registry: ViewRegistry) -> int:
    """Point readers back to the version that served before the current one (and alert)."""
    tables = Tables.of(settings)
    history = [s for s in switches(spark, tables) if s.action in ("publish", "rollback")]
    current = serving_version(spark, tables)
    alive = set(existing_versions(spark, tables))
    earlier = [s.version for s in history if s.version != current and s.version in alive]
    if current is None or not earlier:
        raise KappaError("nothing to roll back to: no earlier version is still on storage")
    target = earlier[-1]
    point_to(spark, tables, target, "rollback", note=f"from v{current}")
    publish_alerts(spark, settings, registry)
    return target


def drop(spark: SparkSession, settings: Settings, version: int) -> None:
    """Delete a version that does not serve: its lane (checkpoint and log) goes whole."""
    tables = Tables.of(settings)
    if serving_version(spark, tables) == version:
        raise KappaError(f"v{version} serves readers; switch away (reprocess/rollback) first")
    if version not in existing_versions(spark, tables):
        raise KappaError(f"v{version} does not exist")
    storage.delete(spark, lane_root(tables, lane_name(version)))
    serving = serving_version(spark, tables)
    if serving is not None:
        point_to(spark, tables, serving, "drop", note=f"dropped v{version}")
