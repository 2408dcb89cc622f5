"""What a reader reads: the table of each serving view, as a design publishes it."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructField, StructType

from config.errors import LkError
from lake import storage

if TYPE_CHECKING:
    from config.settings import ViewSettings
    from views.base import View

PART = "part"
"""The partition column of a table of several kinds of rows (a lane's log, a run's views)."""


class ViewNotReadyError(LkError, RuntimeError):
    """Nothing has computed this view yet (no batch run, no streaming state)."""


def part_rows(part: str, frame: DataFrame, column: str | None = None) -> DataFrame:
    """``frame``'s rows as rows of partition ``part``, in struct ``column`` (default ``part``).

    Rows of several kinds (several views' states, a lane's events and progress) share one
    table this way, so one commit can write them all; :class:`StateTable` reads one back.
    """
    payload = F.struct(*[F.col(f"`{c}`") for c in frame.columns])
    return frame.select(F.lit(part).alias(PART), payload.alias(column or part))


@dataclass(frozen=True)
class StateTable:
    """Where a view's merged state is kept: a whole Delta table, or one part of one.

    A batch run and a streaming lane each keep all their views in one table (the run's
    views table; the lane's log, :mod:`speed_layer.lane_log`), each view's rows in a
    partition ``part`` of their own and in a struct column ``column`` of their own
    (:func:`part_rows`).

    Attributes:
        path: the Delta table.
        part: the value of ``PART`` that selects the view's rows (None: every row).
        column: the struct column that holds the view's rows (None: the table's columns).
        appends: whether later commits add rows to the view (a lane's log), or the table
            is written once (a batch run's views): a reader keeps no state to merge the
            appended rows onto for a table that never gets any.
    """

    path: str
    part: str | None = None
    column: str | None = None
    appends: bool = True

    def read(self, spark: SparkSession, version: int | None = None) -> DataFrame:
        """The view's state rows (as of Delta ``version``, if given)."""
        reader = spark.read.format("delta")
        if version is not None:
            reader = reader.option("versionAsOf", version)
        return self.rows_in(reader.load(self.path))

    def rows_in(self, table: DataFrame) -> DataFrame:
        """The view's state rows out of ``table``, the rows of the whole table.

        For readers of several views of one table: it is read (and cached) once.
        """
        if self.part is not None:
            table = table.where(F.col(PART) == self.part)
        if self.column is not None:
            table = table.select(f"`{self.column}`.*")
        return table

    def appended_files(
        self, spark: SparkSession, since: int, until: int, *, most: int | None = None
    ) -> list[str] | None:
        """The files commits after ``since`` up to ``until`` added to the view's rows.

        None unless they only appended to them (:func:`lake.storage.appended_files`).
        """
        partition = None if self.part is None else {PART: self.part}
        return storage.appended_files(spark, self.path, since, until, partition, most=most)

    def read_files(self, spark: SparkSession, files: list[str], fields: StructType) -> DataFrame:
        """The view's state rows in ``files`` (data files of this table), ``fields`` each.

        Read as the Parquet files they are, without resolving a Delta snapshot: for
        files :meth:`appended_files` named, whose rows need nothing a snapshot adds.
        """
        if self.column is None:
            return spark.read.schema(fields).parquet(*files)
        wrapped = StructType([StructField(self.column, fields)])
        return spark.read.schema(wrapped).parquet(*files).select(f"`{self.column}`.*")

    def __str__(self) -> str:
        return self.path if self.part is None else f"{self.path} [{self.part}]"


class Label(Protocol):
    """Adds ``status`` (``final`` or ``provisional``) to presented rows of a view.

    What makes a row final is the design's rule, so the design that builds a source
    hands it its rule (:mod:`designs.lambda_arch.source`, :mod:`designs.kappa.versions`).
    """

    def __call__(
        self, spark: SparkSession, view: View, rows: DataFrame, settings: ViewSettings
    ) -> DataFrame:
        """``rows`` of ``view`` with ``status`` added."""
        ...


def all_provisional(
    spark: SparkSession, view: View, rows: DataFrame, settings: ViewSettings
) -> DataFrame:
    """Every row ``provisional``: a source that knows of nothing settled."""
    return rows.withColumn("status", F.lit("provisional"))


@dataclass(frozen=True)
class ServingSource:
    """Where every serving view is read from, and why.

    Attributes:
        description: what is served, for people (``batch run X + speed layer``).
        tables: view name -> its merged state.
        label: the design's rule for telling final rows from provisional ones.
        watched: tables whose commits are the only things that can change this source
            (a reader keeping a copy probes these before asking again).
        clock: the serving lane's event-time clock in its newest progress row, read
            before its state: the lane's later commits add to a view only events at or
            after this less the view's allowed lateness (None: no lane serves, or it
            has no clock yet). While ``description`` stays the same, a reader that saw
            the source at this clock need look at nothing earlier.
    """

    description: str
    tables: dict[str, StateTable]
    label: Label = field(default=all_provisional, compare=False)
    watched: tuple[str, ...] = ()
    clock: datetime | None = None
