"""A lane's log: one Delta table that takes everything a micro-batch writes, in one commit.

A micro-batch produces a contribution per view, its late events, its malformed records,
the events it keeps for later joins and rebases, and a progress row. Written to a table
each, that was about ten Delta commits per micro-batch, each costing about a second on
a small machine whatever it carried. Here they are rows of one table, told apart by the
partition column ``part``, each kind in a struct column of its own:

=====================  ===========================  ==================================
``part``               column                       rows
=====================  ===========================  ==================================
``state/E/V``          ``V`` (the view's name)      view V's partial results in epoch E
``late``               ``late``                     (view, event) pairs behind a watermark
``quarantine``         ``quarantine``               malformed records, with the reason
``retained``           ``retained``                 recent valid events, with ``late_for``
``context/V/B``        ``context``                  what view V's join can still meet
``progress``           ``progress``                 one row per micro-batch or rebase
=====================  ===========================  ==================================

One commit per micro-batch is what makes it exactly-once at no cost on the normal
path: the commit holds the micro-batch's progress row, so it happened as a whole or not
at all, and a crash before Spark recorded the micro-batch is undone by restoring this
one table (:mod:`speed_layer.recovery`). The state is merged on read; every
``stream.compact_every`` micro-batches one more commit merges what was appended since
the last one (:func:`replace`, :mod:`speed_layer.maintenance`), and every
``PRUNE_EVERY`` micro-batches a delete drops the retained events nothing can need any
more (a commit only when there are some) and the retained events of each ten minutes
the clock has passed are gathered into one file (:func:`gather`, once each). Every
``stream.tidy_every`` micro-batches the append-only parts' small files are merged and
the files no version within ``stream.log_retention`` needs are deleted, so the log's
files stop growing with the number of micro-batches.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from functools import reduce

from delta.tables import DeltaTable
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType, TimestampNTZType, TimestampType

from lake import storage
from lake.source import PART, StateTable
from lake.source import part_rows as rows
from lake.spark import session_settings
from speed_layer.lane import Lane

LATE, QUARANTINE, RETAINED, PROGRESS = "late", "quarantine", "retained", "progress"
CONTEXT = "context"
"""The struct column of every view's join context (:func:`context_part`): retained events."""
APPEND_ONLY = (PROGRESS, LATE, QUARANTINE)
"""Parts that only ever gain rows: tidied by merging their small files."""
SMALL_FILE = 8 << 20
"""Bytes under which a file of an append-only part is merged with others."""


def state_part(epoch: str, view: str) -> str:
    """The ``part`` of view ``view``'s state in ``epoch``."""
    return f"state/{epoch}/{view}"


def context_part(view: str, seeded_by: int) -> str:
    """The ``part`` of the events view ``view``'s join can still meet (``View.context_kept``).

    Named for the micro-batch that seeded it: a lane whose view settings changed starts
    a part of its own, which no row kept by the settings before can be in.
    """
    return f"{CONTEXT}/{view}/{seeded_by}"


def context_parts(view: str) -> str:
    """A :func:`replace` region: every context part of view ``view``.

    This layout's and the one before it (``context/V``, before parts were named for
    their seed).
    """
    old = f"{CONTEXT}/{view}"
    return f"({whole(old)} OR startswith({PART}, {_quoted(old + '/')}))"


def context_rows(part: str, frame: DataFrame) -> DataFrame:
    """Retained events as log rows of the context part ``part``."""
    return rows(part, frame, CONTEXT)


def state_table(lane: Lane, epoch: str, view: str) -> StateTable:
    """View ``view``'s merged state in ``epoch``, as readers address it."""
    return StateTable(lane.log, state_part(epoch, view), view)


def state_rows(epoch: str, view: str, frame: DataFrame) -> DataFrame:
    """A view's state (or contribution) as log rows of its ``state/E/V`` part."""
    return rows(state_part(epoch, view), frame, view)


def one_frame(pieces: Iterable[DataFrame]) -> DataFrame:
    """The pieces as one frame, each piece in one task: one file per piece per commit.

    Written as they come, each piece keeps its own partitioning (a view's aggregate has
    ``spark.sql.shuffle.partitions`` of them), and a micro-batch wrote some 45 small
    files. Every file costs its writer a task and its readers an open: the serving
    layer's reload, the rebase and the compaction read every one. Each piece is
    coalesced to one partition instead, without a shuffle, and Spark runs the union of
    single partitions as one task, piece after piece. A repartition by ``part`` shuffled
    every row written once more, each as wide as the union of every piece's columns
    (160,000 rows for a micro-batch of 60,000 events): a catch-up's micro-batches of
    60,000 events took 5.02 s with it, 4.56 s without (medians of nine). Callers give
    one piece per part.
    """
    return reduce(
        lambda a, b: a.unionByName(b, allowMissingColumns=True),
        (piece.coalesce(1) for piece in pieces),
    )


def _has(frame: DataFrame, column: str) -> bool:
    """Whether ``frame`` has ``column``, a top-level name or a ``struct.field`` path."""
    top, _, field = column.partition(".")
    if top not in frame.columns:
        return False
    if not field:
        return True
    struct = frame.schema[top].dataType
    return isinstance(struct, StructType) and field in struct.fieldNames()


def properties(retention: timedelta) -> dict[str, str]:
    """The Delta properties a lane's log is created with: how long it keeps its past.

    ``retention`` bounds both the data files a commit replaced (what a VACUUM may
    delete) and the commit files themselves (deleted at a checkpoint, a day at a time:
    Delta truncates the cut-off to a day). A recovery restores one micro-batch back and
    a serving reload holds a version for seconds; nothing else reads the log's past.
    """
    interval = f"interval {int(retention.total_seconds())} seconds"
    return {
        "delta.logRetentionDuration": interval,
        "delta.deletedFileRetentionDuration": interval,
    }


def commit(
    spark: SparkSession,
    lane: Lane,
    pieces: list[DataFrame],
    *,
    indexed: tuple[str, ...] = (),
    keys: Mapping[str, Iterable[str]] | None = None,
    created_with: Mapping[str, str] | None = None,
    note: str | None = None,
) -> None:
    """Append ``pieces`` (made by :func:`rows`) to the log in one commit.

    ``indexed``: the columns (``part.field``) reads filter on; Delta keeps file
    statistics for those alone. Delta's default, the first 32 leaf columns, covers the
    views' structs and never reaches the retained events' time, so the look-back filter
    on them skipped no file; and statistics on columns no read filters on only lengthen
    every write. ``keys``: view name -> key columns; each view's time key is indexed
    too (:func:`index`), for compactions. ``created_with``: more table properties
    (:func:`properties`). Delta
    takes a ``delta.*`` write option as a table property only on the write that creates
    the table and ignores it after, so no check is needed here. ``note``: what the
    commit holds, in its ``commitInfo`` (``userMetadata``; :func:`batch_note`).
    """
    union = one_frame(pieces)
    writer = union.write.format("delta").mode("append").option("mergeSchema", "true")
    present = [c for c in indexed if _has(union, c)] + list(index(union, keys or {}))
    if present:
        writer = writer.option("delta.dataSkippingStatsColumns", ",".join(present))
    for key, value in (created_with or {}).items():
        writer = writer.option(key, value)
    if note is not None:
        writer = writer.option("userMetadata", note)
    writer.partitionBy(PART).save(lane.log)


_BATCH_NOTE = "micro-batch "


def batch_note(batch_id: int) -> str:
    """The note of the commit that holds micro-batch ``batch_id``: when it ended, on record."""
    return f"{_BATCH_NOTE}{batch_id}"


def noted_batch(note: str | None) -> int | None:
    """The micro-batch a commit's note (:func:`batch_note`) says it holds, if any."""
    if note is None or not note.startswith(_BATCH_NOTE):
        return None
    return int(note[len(_BATCH_NOTE) :])


def batch_commits(spark: SparkSession, lane: Lane, last: int | None = None) -> dict[int, float]:
    """Micro-batch id -> when the commit that holds it was made (epoch s), of the ``last``.

    A progress row's ``finished_at`` is when the micro-batch's rows were ready, before
    its commit; this is when they were in the log. A micro-batch undone by a recovery
    and run again is noted twice: the later commit is the one that stands. Read from
    the log's history (its commit files), no Spark job.
    """
    if not storage.is_delta_table(spark, lane.log):
        return {}
    table = DeltaTable.forPath(spark, lane.log)
    history = table.history(last) if last else table.history()
    times: dict[int, float] = {}
    at = F.col("timestamp").cast("double").alias("at")  # epoch s, whatever the time zone
    for row in sorted(history.select("version", at, "userMetadata").collect()):
        if (batch := noted_batch(row.userMetadata)) is not None:
            times[batch] = row.at
    return times


def time_key(fields: StructType, key: Iterable[str]) -> str | None:
    """The column a compaction splits a view's state rows on by time, if any.

    The first of the view's ``key`` columns that holds a time, in its state's
    ``fields``: every row of one key has that time, so the rows at or after a moment
    are whole keys. A state finer than the presented rows (one row per event, with
    none of some key column, as ``purchase_bursts``) has its first column that holds
    a time: the event's. A state with every key column and none a time (one row per
    user and product) has none, and is compacted whole.
    """
    names = {field.name: field.dataType for field in fields}
    times = (TimestampType, TimestampNTZType)
    key = tuple(key)
    timed = [k for k in key if isinstance(names.get(k), times)]
    if timed or all(k in names for k in key):
        return next(iter(timed), None)
    return next((n for n, kind in names.items() if isinstance(kind, times)), None)


def index(frame: DataFrame, keys: Mapping[str, Iterable[str]]) -> tuple[str, ...]:
    """The state columns (``view.field``) compactions select on: each view's :func:`time_key`.

    ``keys``: view name -> key columns; views ``frame`` holds no state of are skipped.
    """
    columns = []
    for view, key in keys.items():
        struct = frame.schema[view].dataType if view in frame.columns else None
        if isinstance(struct, StructType) and (column := time_key(struct, key)) is not None:
            columns.append(f"{view}.{column}")
    return tuple(columns)


def _quoted(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def whole(part: str) -> str:
    """A :func:`replace` region: every row of ``part``."""
    return f"{PART} = {_quoted(part)}"


def from_time(part: str, column: str, start: datetime) -> str:
    """A :func:`replace` region: the rows of ``part`` whose ``column`` is at or after ``start``.

    ``column``: ``struct.field``; ``start``: naive UTC, the sessions' time zone.
    """
    struct, _, name = column.partition(".")
    moment = start.isoformat(sep=" ")
    return f"({whole(part)} AND `{struct}`.`{name}` >= TIMESTAMP {_quoted(moment)})"


def between_times(part: str, column: str, start: datetime, end: datetime) -> str:
    """A :func:`replace` region: the rows of ``part`` whose ``column`` is in [start, end)."""
    struct, _, name = column.partition(".")
    before = f"`{struct}`.`{name}` < TIMESTAMP {_quoted(end.isoformat(sep=' '))}"
    return f"({from_time(part, column, start)} AND {before})"


def gather(
    spark: SparkSession, lane: Lane, part: str, column: str, start: datetime, end: datetime
) -> bool:
    """Rewrite the rows of ``part`` whose ``column`` is in [start, end) as one file.

    The same rows, in one commit noted :data:`lake.storage.SAME_ANSWERS`; False (and no
    commit) when there are none. A part a micro-batch appends to gains a file per
    micro-batch, and a read over a time range opens every file whose statistics reach
    into it; gathered, a range opens a file per ``end - start``. ``column``:
    ``struct.field``, indexed (:func:`commit`); a file that also holds rows outside the
    range keeps them, rewritten to a file of their own (Delta's ``replaceWhere``).
    """
    current = read(spark, lane, part)
    if current is None:
        return False
    name = column.partition(".")[2]
    moment = F.col(name)
    rows_in = current.where((moment >= F.lit(start)) & (moment < F.lit(end)))
    if rows_in.isEmpty():
        return False
    piece = rows(part, rows_in)  # one task, one file: :func:`one_frame`
    replace(spark, lane, [between_times(part, column, start, end)], [piece], storage.SAME_ANSWERS)
    return True


def replace(
    spark: SparkSession, lane: Lane, regions: list[str], pieces: list[DataFrame], note: str
) -> None:
    """Replace every row in ``regions`` (:func:`whole`, :func:`from_time`) with ``pieces``.

    One commit, noted ``note``. Delta removes the files that hold only such rows,
    rewrites the ones that hold some (keeping the others) and skips, by their
    statistics, the files that cannot hold any: a region of a part's latest hour costs
    that hour, not the part.
    """
    (
        one_frame(pieces)
        .write.format("delta")
        .mode("overwrite")
        .option("replaceWhere", " OR ".join(regions))
        .option("userMetadata", note)
        .save(lane.log)
    )


def delete(spark: SparkSession, lane: Lane, part: str, condition: Column) -> None:
    """Delete the rows of ``part`` that meet ``condition`` in one commit (none if no row does).

    ``condition`` names the part's fields inside its struct (``retained.event_time``).
    Delta reads only the files whose statistics allow such rows and rewrites only those,
    so pruning costs what it drops, not everything the part holds.
    """
    DeltaTable.forPath(spark, lane.log).delete((F.col(PART) == part) & condition)


def merge_small_files(spark: SparkSession, lane: Lane, parts: Iterable[str]) -> None:
    """Merge the small files of ``parts`` (one per micro-batch that wrote any) into larger ones.

    The append-only parts (progress, late, quarantine) gain a file with each
    micro-batch that writes to them, and every commit's snapshot, every checkpoint and
    every read of them pays for each file. Only files under :data:`SMALL_FILE` are
    rewritten, so a merge costs at most what accumulated since the last one, never the
    part's whole history. Same rows before and after (Delta's OPTIMIZE): every file it
    adds and removes says it changes no data, so readers that list appended files pass
    it over (:func:`lake.storage.appended`), and a micro-batch appending meanwhile does
    not conflict with it. (It is not noted :data:`lake.storage.SAME_ANSWERS`: OPTIMIZE
    takes a note only from a session setting, which every other commit of the session
    would take too while it runs.)
    """
    listed = ", ".join(_quoted(p) for p in parts)
    with session_settings(spark, {"spark.databricks.delta.optimize.minFileSize": str(SMALL_FILE)}):
        spark.sql(f"OPTIMIZE delta.`{lane.log}` WHERE {PART} IN ({listed})").collect()


def vacuum(spark: SparkSession, lane: Lane) -> None:
    """Delete the data files no version within the log's retention needs (:func:`properties`).

    ``LITE`` finds them in the log instead of listing every file of the table; Delta
    refuses it when the log no longer covers the time since the last VACUUM, and then
    the full listing runs once.
    """
    try:
        spark.sql(f"VACUUM delta.`{lane.log}` LITE").collect()
    except Exception as err:  # Delta's error class, through py4j
        if "LITE" not in str(err):
            raise
        spark.sql(f"VACUUM delta.`{lane.log}`").collect()


def read(
    spark: SparkSession,
    lane: Lane,
    part: str,
    version: int | None = None,
    column: str | None = None,
) -> DataFrame | None:
    """The rows of ``part`` (as of ``version``), from struct ``column`` (default ``part``).

    None if the log holds no such column yet.
    """
    if version is None and not storage.is_delta_table(spark, lane.log):
        return None
    frame = StateTable(lane.log).read(spark, version)
    column = column or part
    if column not in frame.columns:
        return None
    return frame.where(F.col(PART) == part).select(f"`{column}`.*")


def version(spark: SparkSession, lane: Lane) -> int | None:
    """The log's Delta version now (None before its first commit)."""
    return storage.delta_version(spark, lane.log)
