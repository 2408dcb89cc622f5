"""Everything ``lk status`` reports, as plain data (the CLI, Airflow and tests share it)."""

from __future__ import annotations

from typing import Any

from pyspark.sql import SparkSession

from batch_layer import runs
from config.settings import Settings
from designs.platform import Platform, build
from event_log.topics import end_offsets
from lake.source import ViewNotReadyError
from lake.storage import table_size
from lake.tables import Tables
from speed_layer import progress
from speed_layer.lane import find_lane
from speed_layer.metrics import dedup_outcome, read_metrics


def lane_status(
    spark: SparkSession, settings: Settings, name: str, *, sizes: bool = True
) -> dict[str, Any]:
    """A streaming lane: last micro-batch, rates, consumer lag per partition, late counts.

    ``log_size``: the lane log's files and bytes, read and stored (``lake.storage.table_size``:
    a Spark job and a listing of the table, so a page polling every few seconds passes
    ``sizes=False`` and gets None).

    ``duplicates``: re-sends the lane dropped (the lowest offset kept); ``watermark_drops``:
    records a de-duplication watermark dropped unseen (only with ``stream.dedup_horizon``).
    """
    tables = Tables.of(settings)
    lane = find_lane(spark, tables, name)
    if lane is None:
        return {"lane": name, "exists": False}
    rows = progress.history(spark, lane, last=20)
    newest = rows[-1] if rows else None  # a rebase row carries the lane's epoch too
    recent = [r for r in rows if r.kind == progress.MICRO_BATCH]
    ends = end_offsets(settings, settings.kafka.events_topic)
    last = recent[-1] if recent else None
    processed = last.end_offsets if last else {}
    lag = {p: end - processed.get(p, 0) for p, end in sorted(ends.items())}
    metrics = read_metrics(spark, lane.root) or {}
    phases = median_phases(metrics.get("recent_phase_ms") or [])
    totals = progress.totals(spark, lane)
    return {
        "lane": name,
        "exists": True,
        "last_batch_id": last.batch_id if last else None,
        "epoch": newest.epoch if newest else None,
        "event_time_clock": last.max_event_time.isoformat() + "Z"
        if last and last.max_event_time
        else None,
        "processed_offsets": processed,
        "end_offsets": ends,
        "consumer_lag": lag,
        "total_lag": sum(lag.values()),
        "input_rows_per_second": metrics.get("input_rows_per_second"),
        "processed_rows_per_second": metrics.get("processed_rows_per_second"),
        "median_batch_seconds": phases.get("triggerExecution"),
        "median_phase_seconds": phases,
        "dedup_state": with_ids_held(metrics.get("dedup_state"), settings, totals),
        "log_outages": metrics.get("log_outages"),
        **dedup_outcome(totals["deduplicated"], metrics),
        "view_settings": lane.views,
        "log_size": table_size(spark, lane.log) if sizes else None,
        **totals,
    }


def with_ids_held(
    state: dict[str, Any] | None, settings: Settings, totals: dict[str, Any]
) -> dict[str, Any] | None:
    """The de-duplication state, with the ids it holds counted from the progress rows.

    Without a horizon every record the lane let through (valid or malformed, each
    malformed one keyed apart) is an id held for good, and Spark's state stores do not
    count them (``lake.spark.STATE_STORE_ROWS``); with one, only Spark knows how many
    have expired, and it counts.
    """
    if state is None or settings.stream.dedup_horizon is not None:
        return state
    return {**state, "rows": totals["input_rows"]}


def _median_seconds(durations_ms: list[int | None]) -> float | None:
    """The median of some durations in milliseconds, in seconds (unknown ones left out)."""
    known = sorted(d for d in durations_ms if d is not None)
    return round(known[len(known) // 2] / 1000, 2) if known else None


def median_phases(recent: list[dict[str, int]]) -> dict[str, float]:
    """Per phase of a micro-batch, the median of its recent durations, in seconds.

    Spark's own phases (``latestOffset``, ``queryPlanning``, ``addBatch``, ``walCommit``,
    ``commitOffsets``, and ``triggerExecution``, the whole micro-batch) and the lane's
    inside ``addBatch`` (``prepare``, ``count``, ``commit``, ``maintain``), and the
    de-duplication state's inside ``count`` (``stateUpdates``, ``stateRemovals``,
    ``stateCommit``); a phase a micro-batch did not report is left out of its median,
    not counted as zero.
    """
    phases = sorted({name for durations in recent for name in durations})
    return {
        name: seconds
        for name in phases
        if (seconds := _median_seconds([d.get(name) for d in recent])) is not None
    }


def platform_status(
    spark: SparkSession, settings: Settings, platform: Platform | None = None
) -> dict[str, Any]:
    """Mode, serving source, latest batch run, the streaming lane and Kappa versions."""
    platform = platform or build(settings)
    tables = Tables.of(settings)
    status: dict[str, Any] = {"mode": settings.mode}
    try:
        status["serving_source"] = platform.serving_source(spark).description
    except ViewNotReadyError as err:
        status["serving_source"] = f"none ({err})"
    run = runs.latest_published(spark, tables)
    status["batch"] = run.as_dict() if run else None
    try:
        status["streaming"] = lane_status(spark, settings, platform.streaming_lane_name(spark))
    except ViewNotReadyError as err:
        status["streaming"] = {"exists": False, "detail": str(err)}
    return {**status, **platform.design_status(spark)}
