"""The batch runs log: one Delta row per run; publishing a run is one atomic append.

A run's views live in their own folder; readers follow the newest ``published`` row,
so they see the previous complete set of views or the new one, never a half-written
one. The row also carries the run's cutoff, which the serving layer uses to decide
which speed results the batch has absorbed.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from lake import storage
from lake.inline import row_of
from lake.offsets import dump_offsets, load_offsets
from lake.tables import Tables

RUNS_COLUMNS = {
    "run_id": "string",
    "status": "string",
    "started_at": "timestamp",
    "finished_at": "timestamp",
    "cutoff": "string",
    "catalog_cutoff": "string",
    "bronze_rows": "bigint",
    "quarantined_rows": "bigint",
    "views": "array<string>",
    "detail": "string",
}


@dataclass(frozen=True)
class BatchRun:
    """One batch run as recorded in the runs log."""

    run_id: str
    status: str
    started_at: datetime
    finished_at: datetime | None
    cutoff: dict[int, int]
    catalog_cutoff: dict[int, int]
    bronze_rows: int = 0
    quarantined_rows: int = 0
    views: list[str] = field(default_factory=list)
    detail: str = ""

    def as_dict(self) -> dict[str, object]:
        """JSON-ready form."""
        data = asdict(self)
        for key in ("started_at", "finished_at"):
            data[key] = data[key].isoformat() + "Z" if data[key] else None
        return data


def new_run_id(now: datetime | None = None) -> str:
    """A sortable id: ``20261122T134500123456``."""
    return (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%S%f")


def record(spark: SparkSession, tables: Tables, run: BatchRun) -> None:
    """Append one row to the runs log (a single Delta commit)."""
    row = (
        run.run_id,
        run.status,
        run.started_at,
        run.finished_at,
        dump_offsets(run.cutoff),
        dump_offsets(run.catalog_cutoff),
        run.bronze_rows,
        run.quarantined_rows,
        list(run.views),
        run.detail,
    )
    row_of(spark, RUNS_COLUMNS, row).write.format("delta").mode("append").save(tables.batch_runs)


def _parse(row: dict) -> BatchRun:
    return BatchRun(
        run_id=row["run_id"],
        status=row["status"],
        started_at=row["started_at"],
        finished_at=row["finished_at"],
        cutoff=load_offsets(row["cutoff"]),
        catalog_cutoff=load_offsets(row["catalog_cutoff"]),
        bronze_rows=row["bronze_rows"],
        quarantined_rows=row["quarantined_rows"],
        views=list(row["views"] or []),
        detail=row["detail"] or "",
    )


def history(spark: SparkSession, tables: Tables) -> list[BatchRun]:
    """Every recorded run, oldest first."""
    if not storage.is_delta_table(spark, tables.batch_runs):
        return []
    rows = spark.read.format("delta").load(tables.batch_runs).orderBy("run_id", "finished_at")
    return [_parse(r.asDict()) for r in rows.collect()]


def latest_published(spark: SparkSession, tables: Tables) -> BatchRun | None:
    """The run readers follow: the newest ``published`` one, if any."""
    if not storage.is_delta_table(spark, tables.batch_runs):
        return None
    rows = (
        spark.read.format("delta")
        .load(tables.batch_runs)
        .where(F.col("status") == "published")
        .orderBy(F.col("run_id").desc())
        .limit(1)
        .collect()
    )
    return _parse(rows[0].asDict()) if rows else None
