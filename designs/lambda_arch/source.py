"""Where Lambda readers are served from: the newest batch run ⊕ the lane's epoch on it.

Lambda serves the newest published batch run k, with the speed layer's results for the
offsets at or after its cutoff ``C_k``:

- the lane is on epoch k: its state is already ``run k ⊕ speed(offsets >= C_k)``;
- the lane is on an older epoch and has read nothing past ``C_k`` (or has not run):
  run k covers everything, so its views alone are served;
- the lane is on an older epoch and has read past ``C_k``: its old epoch is served,
  whole, until the lane rebases onto run k (its next micro-batch, or between
  micro-batches: :meth:`speed_layer.micro_batch.MicroBatchProcessor.follow_epoch`).
  Serving run k alone would drop what the lane read past ``C_k``; mixing run k with the
  old epoch would count the absorbed speed results twice.

A served row is final when the batch layer computed it exactly as served (no speed
contribution); rows that include speed results are provisional until the next batch
recomputes them (:func:`batch_final`).
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from batch_layer import runs
from config.settings import ViewSettings
from designs.lambda_arch.epochs import INITIAL, LAMBDA_LANE
from lake import storage
from lake.offsets import reaches
from lake.source import Label, ServingSource, StateTable, ViewNotReadyError
from lake.tables import Tables
from speed_layer import progress
from speed_layer.lane import find_lane, lane_root
from speed_layer.lane_log import state_table
from views.base import View
from views.registry import ViewRegistry


def watched_tables(tables: Tables) -> tuple[str, ...]:
    """The runs log and the lane's log: only their commits move the source."""
    return (tables.batch_runs, f"{lane_root(tables, LAMBDA_LANE)}/log")


def batch_final(served: dict[str, StateTable], batch: dict[str, StateTable]) -> Label:
    """Lambda's rule: a row is final when the batch run's table holds it as served.

    A view served straight from its batch table (or with no batch table to compare
    with) is final throughout.
    """

    def label(
        spark: SparkSession, view: View, rows: DataFrame, settings: ViewSettings
    ) -> DataFrame:
        table = batch.get(view.name)
        if table is None or table == served.get(view.name):
            return rows.withColumn("status", F.lit("final"))
        finals = view.present(table.read(spark)).withColumn("_final", F.lit(1))
        joined = rows.join(finals, rows.columns, "left")
        return joined.withColumn(
            "status", F.when(F.col("_final").isNotNull(), "final").otherwise("provisional")
        ).drop("_final")

    return label


def lambda_source(spark: SparkSession, tables: Tables, registry: ViewRegistry) -> ServingSource:
    """The newest published batch run ⊕ the speed results past its cutoff (see above)."""
    run = runs.latest_published(spark, tables)
    lane = find_lane(spark, tables, LAMBDA_LANE)
    last = progress.latest(spark, lane) if lane is not None else None
    watched = watched_tables(tables)
    if (
        lane is not None
        and last is not None
        and (run is None or last.epoch == run.run_id or not reaches(run.cutoff, last.end_offsets))
    ):  # the lane serves
        if last.epoch == (run.run_id if run is not None else INITIAL):
            # settled: the lane moves onto another epoch only after a new run is published
            watched = (tables.batch_runs,)
        state = {v.name: state_table(lane, last.epoch, v.name) for v in registry}
        batch = {}
        if last.epoch != INITIAL and storage.exists(spark, tables.batch_run_dir(last.epoch)):
            batch = {v.name: tables.batch_view(last.epoch, v.name) for v in registry}
        description = f"batch run {last.epoch} + speed layer"
        if run is not None and last.epoch != run.run_id:
            description += f" (rebasing onto batch run {run.run_id})"
        return ServingSource(
            description, state, batch_final(state, batch), watched, last.max_event_time
        )
    if run is None:
        raise ViewNotReadyError("no data yet: run `lk batch` or `lk speed` first")
    views = {name: tables.batch_view(run.run_id, name) for name in run.views}
    return ServingSource(f"batch run {run.run_id}", views, batch_final(views, views), watched)
