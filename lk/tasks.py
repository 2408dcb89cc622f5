"""Entry points shared by Airflow tasks: load settings, build the session, call the layer.

Each returns plain JSON-ready data (Airflow keeps it as the task's XCom). The DAG files
stay thin: they import this module inside their tasks, so parsing a DAG file never
imports Spark, Kafka clients or Great Expectations.
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from config.settings import Settings, load_settings

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from batch_layer.runs import BatchRun

log = logging.getLogger(__name__)

#: The Airflow asset a published batch run updates (downstream DAGs may schedule on it).
BATCH_VIEWS_ASSET = "lk://lambda/batch_views"
#: The detached process name of a Kappa replay of version ``n`` (see ``lk.detached``).
KAPPA_BUILD = "kappa-build-v{version}"


def _session(settings: Settings, name: str) -> SparkSession:
    from lake.spark import build_session

    return build_session(settings, app_name=f"lk-airflow-{name}")


def mode_gate(dag_id: str) -> dict[str, str]:
    """Skip the DAG (this task and, by trigger rule, everything after it) in the other mode.

    Raises:
        AirflowSkipException: ``dag_id`` belongs to the design ``mode`` does not run.
    """
    from designs.platform import dag_skip_reason

    settings = load_settings()
    reason = dag_skip_reason(dag_id, settings)
    if reason is not None:
        from airflow.sdk.exceptions import AirflowSkipException

        log.info("%s", reason)
        raise AirflowSkipException(reason)
    log.info("%s runs: mode is %r", dag_id, settings.mode)
    return {"mode": settings.mode}


def broker_health() -> dict[str, Any]:
    """The broker answers and both topics exist with their partitions and end offsets.

    Raises:
        RuntimeError: a topic is missing (the broker not answering raises the client's error).
    """
    from event_log.topics import end_offsets

    settings = load_settings()
    found: dict[str, Any] = {}
    for topic in (settings.kafka.events_topic, settings.kafka.catalog_topic):
        ends = end_offsets(settings, topic)
        if not ends:
            where = settings.kafka.bootstrap_servers
            raise RuntimeError(f"topic {topic!r} does not exist on {where}")
        found[topic] = {"partitions": len(ends), "end_offsets": ends}
    return {"bootstrap_servers": settings.kafka.bootstrap_servers, "topics": found}


def batch_run(force: bool = False) -> dict[str, Any]:
    """One Lambda batch run in one call (the function ``lk batch`` calls)."""
    from batch_layer.job import run_batch
    from designs.platform import build

    settings = load_settings()
    spark, platform = _session(settings, "batch"), build(settings)
    result = run_batch(spark, settings, platform.registry, force=force)
    if not result.skipped:
        platform.publish_alerts(spark)
    return {**result.run.as_dict(), "skipped": result.skipped}


def batch_compute(force: bool = False) -> dict[str, Any]:
    """Freeze a cutoff, land the log and write every view of a new, unpublished run."""
    from batch_layer.job import compute_run
    from designs.platform import build

    settings = load_settings()
    spark = _session(settings, "batch-compute")
    result = compute_run(spark, settings, build(settings).registry, force=force)
    return {**result.run.as_dict(), "skipped": result.skipped}


def _computed_run(spark: SparkSession, settings: Settings, run_id: str) -> BatchRun:
    from batch_layer import runs
    from lake.tables import Tables

    rows = [r for r in runs.history(spark, Tables.of(settings)) if r.run_id == run_id]
    computed = [r for r in rows if r.status == "computed"]
    if not computed:
        raise RuntimeError(f"batch run {run_id} has no computed row in the runs log")
    if any(r.status != "computed" for r in rows):
        raise RuntimeError(f"batch run {run_id} is {rows[-1].status} already")
    return computed[-1]


def batch_validate(run: dict[str, Any]) -> dict[str, Any]:
    """Great Expectations over bronze, the landed records and every view of the run.

    Raises:
        QualityError: a check failed; the run is recorded ``failed`` and never published.
    """
    from batch_layer.job import validate_run
    from designs.platform import build

    if run["skipped"]:
        return {"run_id": run["run_id"], "skipped": True, "checks": {}}
    settings = load_settings()
    spark = _session(settings, "batch-validate")
    computed = _computed_run(spark, settings, run["run_id"])
    reports = validate_run(spark, settings, computed, build(settings).registry)
    return {
        "run_id": run["run_id"],
        "skipped": False,
        "checks": {r.table: f"{r.evaluated} expectations passed" for r in reports},
    }


def batch_publish(validated: dict[str, Any]) -> dict[str, Any]:
    """Publish a validated run: one append to the runs log; readers switch to it; alerts."""
    from batch_layer.job import publish_run
    from designs.platform import build

    if validated["skipped"]:
        return {"run_id": validated["run_id"], "published": False, "detail": "log unchanged"}
    settings = load_settings()
    spark = _session(settings, "batch-publish")
    run = publish_run(spark, settings, _computed_run(spark, settings, validated["run_id"]))
    build(settings).publish_alerts(spark)
    return {**run.as_dict(), "published": True}


def speed_catch_up() -> dict[str, Any]:
    """Run the mode's streaming job until it has processed the log end (``lk speed``).

    Skipped (with the reason) while a long-running ``lk speed`` holds the lane: two
    queries on one checkpoint would race, and that one catches up by itself.
    """
    from designs.platform import build
    from lk import detached

    settings = load_settings()
    if (pid := detached.running(settings, detached.SPEED_PROCESS)) is not None:
        log.info("lk speed runs (pid %s): it moves onto the new batch run by itself", pid)
        return {"lane": None, "micro_batches": 0, "seconds": 0.0, "long_running_pid": pid}
    run = build(settings).run_streaming(_session(settings, "speed"), until_caught_up=True)
    return {"lane": run.lane, "micro_batches": run.micro_batches, "seconds": run.seconds}


def status() -> dict[str, Any]:
    """The platform status (``lk status --json``)."""
    from designs.status import platform_status

    settings = load_settings()
    current = platform_status(_session(settings, "status"), settings)
    return json.loads(json.dumps(current, default=str))


# --- the speed-layer watchdog -------------------------------------------------------------


def _lane_lag(settings: Settings) -> dict[str, Any]:
    """Consumer lag of the mode's streaming lane and the age of its last micro-batch."""
    from designs.status import platform_status

    lane = platform_status(_session(settings, "watchdog"), settings).get("streaming") or {}
    return json.loads(json.dumps(lane, default=str))


def speed_ensure_running() -> dict[str, Any]:
    """Start ``lk speed`` detached unless a live one holds its PID file."""
    from lk import detached

    settings = load_settings()
    if (pid := detached.running(settings, detached.SPEED_PROCESS)) is not None:
        log.info("lk speed is alive (pid %s)", pid)
        return {"pid": pid, "started": False}
    pid = detached.start(settings, detached.SPEED_PROCESS, ["speed"])
    log.warning("lk speed was not running: started it detached (pid %s)", pid)
    return {"pid": pid, "started": True}


def speed_lag_check(process: dict[str, Any]) -> dict[str, Any]:
    """Consumer lag under ``watchdog.max_lag``, or it stays over it for ``watchdog.lag_grace``.

    A process the watchdog just started is given the grace period to catch up; one whose
    lag stays over the threshold fails the task with the figures.

    Raises:
        RuntimeError: the lag stayed over the threshold, or ``lk speed`` died meanwhile.
    """
    from lk import detached

    settings = load_settings()
    limit = settings.watchdog.max_lag
    deadline = time.monotonic() + settings.watchdog.lag_grace.total_seconds()
    samples = []
    while True:
        lane = _lane_lag(settings)
        lag = lane.get("total_lag")
        samples.append(lag)
        per_partition = lane.get("consumer_lag")
        log.info("lane %s: lag %s (limit %s) %s", lane.get("lane"), lag, limit, per_partition)
        if lag is not None and lag <= limit:
            return {
                "lane": lane.get("lane"),
                "total_lag": lag,
                "consumer_lag": per_partition,
                **process,
            }
        if detached.running(settings, detached.SPEED_PROCESS) is None:
            tail = detached.output_tail(settings, detached.SPEED_PROCESS)
            raise RuntimeError(f"lk speed died (lag {lag}):\n{tail}")
        if time.monotonic() >= deadline:
            raise RuntimeError(
                f"consumer lag of {lane.get('lane')} stayed over {limit} offsets for "
                f"{settings.watchdog.lag_grace}: samples {samples}, per partition "
                f"{per_partition}, processed {lane.get('processed_rows_per_second')} rows/s"
            )
        time.sleep(10)


# --- Kappa reprocessing in steps ------------------------------------------------------------


def kappa_preflight() -> dict[str, Any]:
    """Before anything is opened: the retained log is complete (starts at offset 0).

    Returns the log end and the versions, for the run's record; ``kappa_new_version``
    measures the target itself (:func:`~designs.kappa.reprocess.begin`).

    Raises:
        TruncatedLogError: retention or a delete removed history.
    """
    from designs.kappa.reprocess import check_log_complete
    from designs.kappa.versions import existing_versions, serving_version
    from lake.tables import Tables

    settings = load_settings()
    target = check_log_complete(settings)
    spark = _session(settings, "kappa-preflight")
    tables = Tables.of(settings)
    return {
        "target": {str(p): o for p, o in target.items()},
        "offsets": sum(target.values()),
        "serving": serving_version(spark, tables),
        "versions": existing_versions(spark, tables),
    }


def _kappa_settings(views: dict[str, Any] | None) -> Settings:
    """The configured settings with ``views`` (the DAG's parameter) applied on top."""
    settings = load_settings()
    if not views:
        return settings
    merged = type(settings.views).model_validate(settings.views.model_dump() | views)
    return settings.model_copy(update={"views": merged})


def kappa_new_version(preflight: dict[str, Any], views: dict[str, Any] | None) -> dict[str, Any]:
    """Step 1 and the start of 2: resume the unfinished version or open the next, replay it.

    The same :func:`~designs.kappa.reprocess.begin` ``lk kappa reprocess`` calls: an
    unfinished version with the same view settings is resumed from its checkpoint, other
    unfinished ones are dropped. The version freezes the configured view settings with
    ``views`` (the DAG's parameter) applied on top: that is how a logic change reaches a
    new version. Its replay runs detached (``lk kappa build``), unless one still runs.
    """
    from designs.kappa.reprocess import begin
    from designs.kappa.versions import open_version
    from lk import detached

    settings = _kappa_settings(views)
    spark = _session(settings, "kappa-new")
    plan = begin(spark, settings)
    name = KAPPA_BUILD.format(version=plan.version)
    pid = detached.running(settings, name)
    if pid is None:
        pid = detached.start(settings, name, ["kappa", "build", str(plan.version)])
    frozen = json.loads(json.dumps(open_version(spark, settings, plan.version).views, default=str))
    log.info(
        "v%s replays (pid %s, resumed %s, dropped %s), view settings %s",
        plan.version,
        pid,
        plan.resumed,
        plan.abandoned,
        frozen,
    )
    return {**plan.as_dict(), "pid": pid, "view_settings": frozen}


def _metrics_offsets(settings: Settings, version: int) -> dict[int, int] | None:
    """End offsets of the version's last micro-batch, from the lane's metrics.

    Local storage is read as a plain file, so a sensor poke needs no Spark session.
    """
    from designs.kappa.versions import lane_name
    from lake import storage
    from lake.tables import Tables
    from speed_layer.lane import lane_root
    from speed_layer.metrics import processed_offsets, read_metrics

    root = lane_root(Tables.of(settings), lane_name(version))
    local = storage.local_path(root) is not None
    spark = None if local else _session(settings, "kappa-sensor")
    return processed_offsets(read_metrics(spark, root), settings.kafka.events_topic)


def kappa_caught_up(built: dict[str, Any]) -> bool:
    """Sensor poke: has the new version reached the log end its plan measured?

    Raises:
        RuntimeError: the replay process exited before reaching it.
    """
    from lk import detached

    settings = load_settings()
    version = built["version"]
    target = {int(p): o for p, o in built["target"].items()}
    name = KAPPA_BUILD.format(version=version)
    # Liveness first: a replay that reaches the target writes its metrics, then exits.
    gone = detached.running(settings, name) is None
    reached = _metrics_offsets(settings, version) or {}
    done = all(reached.get(p, 0) >= o for p, o in target.items() if o > 0)
    log.info("v%s reached %s of %s", version, reached, target)
    if not done and gone:
        tail = detached.output_tail(settings, name)
        raise RuntimeError(f"the replay of v{version} exited early:\n{tail}")
    return done


def kappa_validate(built: dict[str, Any]) -> dict[str, Any]:
    """Steps 3 and 4: the replay is complete, and every view of it passes Great Expectations.

    Raises:
        TruncatedLogError: the replay did not start at offset 0.
        DroppedEventsError: it dropped records behind a watermark.
        QualityError: a check failed; the switch does not happen, the old version serves.
    """
    from designs.kappa.gate import validate_version
    from designs.kappa.reprocess import ReprocessPlan, check_complete
    from designs.platform import build

    settings = load_settings()
    spark = _session(settings, "kappa-validate")
    plan = ReprocessPlan.of(built)
    check_complete(spark, settings, plan)
    reports = validate_version(spark, settings, plan.version, build(settings).registry)
    return {r.table: f"{r.evaluated} expectations passed" for r in reports}


def kappa_switch(built: dict[str, Any]) -> dict[str, Any]:
    """Step 5: point readers at the new version, then save the v-old/v-new diff; the old stays."""
    from designs.kappa.reprocess import ReprocessPlan, switch
    from designs.platform import build

    settings = load_settings()
    plan = ReprocessPlan.of(built)
    diff = switch(_session(settings, "kappa-switch"), settings, plan, build(settings).registry)
    previous = plan.previous
    rollback = f"`lk kappa rollback` returns to v{previous}" if previous else "no earlier version"
    return {"version": plan.version, "previous": previous, "diff": diff, "rollback": rollback}


def kappa_reprocess() -> dict[str, Any]:
    """All five steps in this process (``lk kappa reprocess``)."""
    from designs.kappa.reprocess import reprocess
    from designs.platform import build

    settings = load_settings()
    spark = _session(settings, "kappa")
    result = reprocess(spark, settings, build(settings).registry)
    return {"version": result.version, "previous": result.previous, "diff": result.diff}


# --- comparing the designs ----------------------------------------------------------------


def compare_designs(
    options: dict[str, Any] | None = None, out: str | None = None
) -> dict[str, Any]:
    """``lk compare`` as a task: the same function, the report under ``out`` (or ``.lk/reports``).

    Returns where the report is, whether the run is valid and the verdict's sentences.
    """
    from datetime import UTC, datetime

    from compare.options import CompareOptions
    from compare.run import run_compare

    settings = load_settings()
    opts = CompareOptions.model_validate(options or {})
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    target = Path(out or ".lk/reports").resolve() / f"compare_{stamp}"

    def narrate(design: str, event: dict[str, Any]) -> None:
        if event.get("message"):
            log.info("%s %s: %s", design, event["event"], event["message"])

    results = run_compare(settings, opts, target, narrate)
    return {
        "out": str(target),
        "report": str(target / "report.html"),
        "valid": results["valid"],
        "verdict": results["verdict"],
    }
