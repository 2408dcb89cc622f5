"""The nightly batch run: freeze a cutoff, land the log, recompute every view, check, publish.

``run_batch`` is what ``lk batch`` calls; the Airflow DAG calls its three steps
(``compute_run``, ``validate_run``, ``publish_run``) as separate tasks. It never modifies
a published view: each run writes its own folder and becomes visible only through the
one atomic append to the runs log, after every quality check has passed.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from decimal import Decimal
from functools import reduce

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from batch_layer import bronze, runs
from batch_layer.runs import BatchRun
from config.settings import Settings
from event_log.catalog import read_catalog, read_catalog_versions
from event_log.contract import EventContract
from event_log.kafka_source import read_range
from event_log.schema import SHOP
from event_log.topics import end_offsets
from lake import storage
from lake.offsets import below
from lake.source import PART, part_rows
from lake.tables import Tables
from measure.laps import Laps
from quality.checks import (
    CheckReport,
    QualityError,
    TableChecks,
    require,
    run_checks,
    warm_up,
)
from views.base import View, ViewContext
from views.loader import check_views
from views.registry import ViewRegistry

log = logging.getLogger(__name__)
KEEP_RUNS = 2


@dataclass(frozen=True)
class BatchResult:
    """What a call to :func:`run_batch` did.

    ``steps``: seconds per step (``compute``: read, land and compute every view;
    ``validate``: the checks; ``publish``: the switch of readers), where the run's time
    went.
    """

    run: BatchRun
    skipped: bool
    checks: tuple[CheckReport, ...] = ()
    steps: dict[str, float] = field(default_factory=dict)


def bronze_events(spark: SparkSession, tables: Tables, cutoff: Mapping[int, int]) -> DataFrame:
    """Bronze events below ``cutoff``: the input of every batch view."""
    return spark.read.format("delta").load(tables.bronze).where(below(cutoff)).drop("run_id")


def view_checks(view: View, events: DataFrame, ctx: ViewContext) -> TableChecks:
    """The quality checks of one presented batch view."""
    sums: dict[str, int | Decimal] = {}
    if view.totals is not None:
        expected = view.totals(events, ctx.settings)
        # an aggregate over no grouping columns has exactly one row
        [row] = events.agg(*[expr.alias(name) for name, expr in expected.items()]).collect()
        sums = {name: row[name] for name in expected if row[name] is not None}
    return TableChecks(
        table=view.name,
        not_null=view.key,
        unique_key=view.key,
        non_negative=view.non_negative,
        column_sums=sums,
    )


def bronze_checks(contract: EventContract) -> TableChecks:
    """The checks of bronze: one row per event id, every required field set.

    Where the contract names a closed set of values (``field IN (...)`` rules), bronze
    holds only those.
    """
    return TableChecks(
        table="bronze",
        not_null=(*(f for f in contract.required if f not in contract.wire_only), "partition",
                  "offset"),
        unique_key=(contract.id_field,),
        allowed_values=allowed_values(contract),
    )  # fmt: skip


def allowed_values(contract: EventContract) -> dict[str, tuple[str, ...]]:
    """``field IN ('a', 'b')`` rules of the contract, as closed sets of string values."""
    found = {}
    for rule in contract.rules:
        match = re.fullmatch(r"\s*(\w+)\s+IN\s*\(([^)]*)\)\s*", rule.check, re.IGNORECASE)
        if match and match.group(1) not in contract.wire_only:
            values = re.findall(r"'((?:[^']|'')*)'", match.group(2))
            if values:
                found[match.group(1)] = tuple(v.replace("''", "'") for v in values)
    return found


BRONZE_CHECKS = bronze_checks(SHOP)


def quarantine_checks(settings: Settings) -> TableChecks | None:
    """At most ``quality.max_quarantined_fraction`` of the records the run landed are malformed.

    The decoder quarantines every malformed record, so no view ever sees one; what a
    check can still catch is a producer gone bad (a share of junk far above normal),
    which should stop the publication rather than quietly shrink the views.
    """
    fraction = settings.quality.max_quarantined_fraction
    if fraction >= 1.0:
        return None
    return TableChecks(table="landed_records", null_at_least={"reason": 1.0 - fraction})


def landed_records(spark: SparkSession, tables: Tables, run_id: str) -> DataFrame:
    """One row per record run ``run_id`` landed: ``reason`` null for events, set for junk."""
    good = (
        spark.read.format("delta")
        .load(tables.bronze)
        .where(F.col("run_id") == run_id)
        .select(F.lit(None).cast("string").alias("reason"))
    )
    bad = (
        spark.read.format("delta")
        .load(tables.quarantine)
        .where((F.col("layer") == "batch") & (F.col("run_id") == run_id))
        .select("reason")
    )
    return good.unionByName(bad)


def write_views(path: str, registry: ViewRegistry, events: DataFrame, ctx: ViewContext) -> None:
    """Every view's state over ``events`` into one new Delta table at ``path``: one commit.

    One Spark job computes and writes them all, each view's rows in a part of its own
    (:func:`lake.source.part_rows`, read back by :meth:`lake.tables.Tables.batch_view`).
    A table per view cost each view its own commit, snapshot and file listing (written,
    then read back by the checks): most of a small run's time went to Delta's log work.
    """
    pieces = [part_rows(view.name, view.compute(events, ctx), view.name) for view in registry]
    if not pieces:
        return
    union = reduce(lambda a, b: a.unionByName(b, allowMissingColumns=True), pieces)
    union.write.format("delta").partitionBy(PART).mode("overwrite").save(path)


def compute_run(
    spark: SparkSession,
    settings: Settings,
    registry: ViewRegistry,
    *,
    force: bool = False,
    on_view: Callable[[str], None] | None = None,
) -> BatchResult:
    """Freeze a cutoff, land the log up to it, write every view into the run's own folder.

    The run is recorded as ``computed``: readers still follow the previous published
    run, so nothing is visible until :func:`validate_run` and :func:`publish_run` pass.

    Returns:
        The computed run, or the latest published one with ``skipped`` when the log has
        not moved since it (and ``force`` is off).
    """
    check_views(spark, registry, settings)
    tables = Tables.of(settings)
    started = datetime.now(UTC).replace(tzinfo=None)
    cutoff = end_offsets(settings, settings.kafka.events_topic)
    catalog_cutoff = end_offsets(settings, settings.kafka.catalog_topic)
    previous = runs.latest_published(spark, tables)
    if (
        previous is not None
        and not force
        and previous.cutoff == cutoff
        and previous.catalog_cutoff == catalog_cutoff
        and set(previous.views) == set(registry.names())
        # and its views are where this code reads them (a run of the old layout is redone)
        and storage.exists(spark, tables.batch_views(previous.run_id))
    ):
        log.info("log unchanged since run %s: nothing to do", previous.run_id)
        return BatchResult(run=previous, skipped=True)

    run = BatchRun(
        run_id=runs.new_run_id(),
        status="running",
        started_at=started,
        finished_at=None,
        cutoff=cutoff,
        catalog_cutoff=catalog_cutoff,
    )
    landed_from = previous.cutoff if previous else {}
    if any(cutoff[p] > landed_from.get(p, 0) for p in cutoff):
        raw = read_range(spark, settings, settings.kafka.events_topic, landed_from, cutoff)
        landing = bronze.land(spark, tables, raw, run.run_id, registry.contract)
    else:
        bronze.ensure_tables(spark, tables, registry.contract)
        landing = bronze.Landing(landed=0, quarantined=0)
    events = bronze_events(spark, tables, cutoff).persist()
    catalog = read_catalog(spark, settings, catalog_cutoff).persist()
    versions = read_catalog_versions(spark, settings, catalog_cutoff).persist()  # read if used
    try:
        write_views(
            tables.batch_views(run.run_id),
            registry,
            events,
            ViewContext(settings.views, catalog, versions),
        )
        if on_view:
            for view in registry:
                on_view(view.name)
        bronze_rows = events.count()
    finally:
        events.unpersist()
        catalog.unpersist()
        versions.unpersist()
    quarantined_rows = spark.read.format("delta").load(tables.quarantine).count()
    run = replace(
        run,
        status="computed",
        finished_at=datetime.now(UTC).replace(tzinfo=None),
        bronze_rows=bronze_rows,
        quarantined_rows=quarantined_rows,
        views=registry.names(),
        detail=f"landed {landing.landed} events, quarantined {landing.quarantined}",
    )
    runs.record(spark, tables, run)
    return BatchResult(run=run, skipped=False)


def validate_run(
    spark: SparkSession, settings: Settings, run: BatchRun, registry: ViewRegistry
) -> tuple[CheckReport, ...]:
    """Check bronze, the records the run landed and every view of a computed run with GX.

    Raises:
        QualityError: a check failed; the run is recorded as ``failed`` (never published)
            and the previously published views stay published.
    """
    tables = Tables.of(settings)
    events = bronze_events(spark, tables, run.cutoff).persist()
    # the run's views table, read once for every view's checks (a read per view listed
    # the table's files each)
    views = spark.read.format("delta").load(tables.batch_views(run.run_id)).persist()
    ctx = ViewContext(settings.views)

    def check(view: View) -> CheckReport:
        state = tables.batch_view(run.run_id, view.name).rows_in(views)
        return run_checks(view.present(state), view_checks(view, events, ctx))

    try:
        reports = [run_checks(events, bronze_checks(registry.contract))]
        if (landed := quarantine_checks(settings)) is not None:
            reports.append(run_checks(landed_records(spark, tables, run.run_id), landed))
        # side by side, as the views were computed: each view's Spark jobs overlap the
        # others' (GX itself validates one table at a time)
        mine = [view for view in registry if view.name in run.views]
        with ThreadPoolExecutor(max(len(mine), 1), thread_name_prefix="lk-batch-check") as pool:
            reports += pool.map(check, mine)
    finally:
        events.unpersist()
        views.unpersist()
    try:
        require(reports)
    except QualityError as err:
        runs.record(spark, tables, replace(run, status="failed", detail=str(err)))
        raise
    return tuple(reports)


def publish_run(spark: SparkSession, settings: Settings, run: BatchRun) -> BatchRun:
    """Make a validated run the one readers follow: one append to the runs log.

    Older runs' folders are deleted afterwards, keeping the newest ``KEEP_RUNS``.
    """
    tables = Tables.of(settings)
    published = replace(run, status="published")
    runs.record(spark, tables, published)
    _drop_old_runs(spark, tables)
    return published


def run_batch(
    spark: SparkSession,
    settings: Settings,
    registry: ViewRegistry,
    *,
    force: bool = False,
    on_view: Callable[[str], None] | None = None,
) -> BatchResult:
    """Recompute every registered view over the whole log up to a frozen cutoff.

    :func:`compute_run`, :func:`validate_run` and :func:`publish_run` in one call (the
    Airflow DAG runs them as three tasks, so the validation gate is visible).

    Args:
        spark: the session to run on.
        settings: platform settings.
        registry: the views to compute (the platform's, ``designs.platform.build``).
        force: recompute even when the log has not moved since the last published run.
        on_view: called with each view's name once the views are written (progress
            reporting, fault injection).

    Raises:
        QualityError: a check failed; the run is recorded as failed and the previously
            published views stay published.
    """
    lap = Laps()
    warm_up()  # Great Expectations' first use in a process, beside the views' Spark jobs
    computed = compute_run(spark, settings, registry, force=force, on_view=on_view)
    if computed.skipped:
        return computed
    lap("compute")
    checks = validate_run(spark, settings, computed.run, registry)
    lap("validate")
    published = publish_run(spark, settings, computed.run)
    lap("publish")
    return BatchResult(run=published, skipped=False, checks=checks, steps=lap.seconds())


def _drop_old_runs(spark: SparkSession, tables: Tables) -> None:
    """Keep the folders of the newest published runs; delete older and failed ones."""
    history = runs.history(spark, tables)
    published = [r.run_id for r in history if r.status == "published"]
    keep = set(published[-KEEP_RUNS:])
    for run in history:
        if run.run_id not in keep and run.run_id < published[-1]:
            storage.delete(spark, tables.batch_run_dir(run.run_id))


def read_batch_state(spark: SparkSession, settings: Settings, view: View) -> DataFrame | None:
    """The state of ``view`` from the latest published run, or None before the first run."""
    tables = Tables.of(settings)
    run = runs.latest_published(spark, tables)
    if run is None or view.name not in run.views:
        return None
    return tables.batch_view(run.run_id, view.name).read(spark)
