"""Keep in-memory snapshots of every presented view current, from a background thread.

Each cycle first probes, without a Spark job, the Delta versions of the tables that
can change the serving source (the source names them: Kappa's pointer log; Lambda's
batch runs log, and its lane's log only while the lane is not on the newest run's
epoch). Only when one of them moved does it resolve the source again (with Spark).
Then it probes the version of every served view table and reloads a view only when its
table or version changed, on the SparkSession the process built once: the view's merge
rule and presentation over its state, read whole, or, for a lane's view, the files its
commits appended since the last reload merged onto the state that reload kept, the
lane's compactions passed over (:class:`MergedBase`); of a view split by some columns
(``View.split_by``) once it serves :data:`SPLIT_FROM` rows, only the values those files
hold are merged, presented again and collected, and the files are merged into the state
after the answer is out.
Requests never touch Spark; they read the last published :class:`ServedState`.

The views due for a reload are loaded at once, each on a thread of its own: a reload
of a small view is mostly fixed cost (resolving the Delta version, listing its files,
scheduling a few small stages), not work for the cores, and a lane commits all its
views in one commit, so loaded one after the other their fixed costs add up.

A view nobody asked for in ``serving.idle_after`` is not reloaded when its table moves,
nor when the source moves it to another table (a Lambda lane opening a batch run's
epoch, a Kappa version switched to): each reload is a Spark job on the same cores as the
lane that moved it, and a lane commits all its views at once, so at a handoff every
view is due at the same moment. Such a view is listed ``behind``; the request that finds
it so wakes the refresher and waits for its reload, so no request is answered from rows
older than the table the refresher had already seen.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from config.settings import Settings
from lake.kept import kept, released
from lake.pools import LIVE, in_pool
from lake.source import ServingSource, StateTable, ViewNotReadyError
from lake.storage import commit_stamp, delta_version
from serving_layer.snapshot import ViewSnapshot
from views.base import View
from views.registry import ViewRegistry

log = logging.getLogger(__name__)

Resolve = Callable[[SparkSession], ServingSource]


def now() -> datetime:
    """The current UTC time, naive (the platform's convention)."""
    return datetime.now(UTC).replace(tzinfo=None)


@dataclass(frozen=True)
class ServedState:
    """What the API serves right now; replaced as a whole, never mutated.

    Attributes:
        mode: the configured design (``lambda`` or ``kappa``).
        source: the serving source's description, None before one was found.
        views: name -> snapshot of every view loaded so far.
        missing: name -> why a registered view is not served.
        checked_at: when the refresher last confirmed the snapshots are current.
        error: the last refresh failure or not-ready reason, if any.
        behind: views whose table moved past their snapshot, left so because nobody
            asked for them lately (the next request waits for a reload).
    """

    mode: str
    source: str | None = None
    views: dict[str, ViewSnapshot] = field(default_factory=dict)
    missing: dict[str, str] = field(default_factory=dict)
    checked_at: datetime | None = None
    error: str | None = None
    behind: frozenset[str] = frozenset()

    @property
    def ready(self) -> bool:
        """Whether a source was found and at least one view is loaded."""
        return self.source is not None and bool(self.views)


MAX_APPENDED = 32
"""Files a reload merges onto a view's kept state before it reads the whole part again."""

FOLD_AFTER = 16
"""Files a split view's base holds unmerged before the refresher merges them into it."""

SPLIT_FROM = 30_000
"""Rows a split view serves before its reload merges only the values a commit touched.

Below it, merging the whole state onto the base costs less than the semi-join, the
pending files read again and the merge into the base after the answer
(``benchmarks.split_reload``, 2026-12-07: 0.40 against 0.56 s at 17,000 rows served,
0.66 against 0.43 s at 45,000).
"""


@dataclass(frozen=True)
class MergedBase:
    """A lane view's merged state at one version, kept in the serving session (:func:`kept`).

    A lane's commits append partial results to a view's part, and its compactions
    merge them without changing an answer (:data:`lake.storage.SAME_ANSWERS`). So a
    reload merges the files appended since onto this instead of reading and merging
    the whole part again: merging merged state with more partial results equals
    merging them all, the law compaction relies on too (:mod:`views.base`). What that
    reload merged is kept as the next reload's base, so each reload reads only the
    files of the commits since the one before, whatever the view's history.

    A view split by some columns (``View.split_by``) is not merged whole on each reload:
    its reload merges only the touched values' rows (:func:`_changed`), and the files it
    read wait in ``pending``, read with ``merged`` as the view's state at ``reached``,
    until the refresher merges them in (:meth:`folded`) after it has served the reload,
    every :data:`FOLD_AFTER` files. Merging the whole state on each commit cost a job
    over every row of the view on the way to each answer.

    The files appended after ``version`` are read where they were written: a compaction
    may have replaced them since, and a VACUUM deletes a replaced file once it is older
    than the log's retention. So a base serves only while its version is younger than
    half of that (``max_age``); a base whose view nobody asked for grows older; pending
    files are merged in once the base is a quarter of it old (:meth:`due`).

    Attributes:
        table: the view's part of the lane's log.
        version: the version ``merged`` was read at.
        stamp: that commit's ``commitInfo`` (:func:`lake.storage.commit_stamp`): a log
            deleted and written again numbers its commits from 0 again.
        merged: the view's merged state at ``version`` (kept).
        fields: the state rows' schema, to read appended files with.
        read_at: when ``version`` was read (``time.monotonic``).
        pending: files appended after ``version``, up to ``reached``, not merged yet.
        reached: the version ``merged`` and ``pending`` stand for (None: ``version``).
        reached_stamp: that commit's ``commitInfo``.
    """

    table: StateTable
    version: int
    stamp: str | None
    merged: DataFrame
    fields: StructType
    read_at: float = field(default_factory=time.monotonic)
    pending: tuple[str, ...] = ()
    reached: int | None = None
    reached_stamp: str | None = None

    @property
    def at(self) -> int:
        """The version this base stands for: ``merged`` with the ``pending`` files."""
        return self.version if self.reached is None else self.reached

    def appended_since(
        self, spark: SparkSession, table: StateTable, version: int, max_age: float
    ) -> list[str] | None:
        """The files appended to ``table`` since this base, up to ``version``.

        None when this base cannot serve as one for it: another table, a log written
        again, anything but appends and compactions since
        (:func:`lake.storage.appended_files`), a version read more than ``max_age`` s ago.
        """
        too_old = time.monotonic() - self.read_at > max_age
        if table != self.table or version < self.at or too_old:
            return None
        if commit_stamp(spark, table.path, self.version) != self.stamp:
            return None
        most = MAX_APPENDED - len(self.pending)
        return table.appended_files(spark, self.at, version, most=max(most, 0))

    def grown(self, files: list[str], version: int, stamp: str | None) -> MergedBase:
        """This base with ``files``, appended up to ``version``, pending (not merged)."""
        return replace(self, pending=(*self.pending, *files), reached=version, reached_stamp=stamp)

    def state(self, spark: SparkSession) -> DataFrame:
        """The view's state rows at :attr:`at`: ``merged`` and the ``pending`` files."""
        if not self.pending:
            return self.merged
        return self.merged.unionByName(
            self.table.read_files(spark, list(self.pending), self.fields)
        )

    def due(self, max_age: float) -> bool:
        """Whether its pending files are to be merged in: many, or the base growing old."""
        old = time.monotonic() - self.read_at > max_age / 2
        return bool(self.pending) and (len(self.pending) >= FOLD_AFTER or old)

    def folded(self, spark: SparkSession, view: View) -> MergedBase:
        """This base with its pending files merged in (kept; this one stays as it is)."""
        if not self.pending:
            return self
        merged = kept(view.merge(self.state(spark)))
        return MergedBase(self.table, self.at, self.reached_stamp, merged, self.fields)


Loaded = tuple[ViewSnapshot, MergedBase | None]
"""A reload's snapshot, and the base the next reload of the view merges onto."""


def load_snapshot(
    spark: SparkSession,
    view: View,
    table: StateTable,
    version: int,
    *,
    base: MergedBase | None = None,
    previous: ViewSnapshot | None = None,
    cache_base: bool = True,
    max_age: float = float("inf"),
    split_from: int = 0,
) -> Loaded:
    """Presented rows of ``view`` from its state ``table`` as of ``version``.

    Args:
        spark: the session to read with.
        view: the view whose ``merge``, ``present`` and ``order_by`` apply.
        table: where the view's state is kept.
        version: the table version to read (the one the snapshot reports).
        base: the view's state kept by the last reload, if any: when the commits since
            only appended to the view's part (or compacted it), only their files are
            read, merged onto it.
        previous: the snapshot served now, made with ``base``; kept (at ``version``)
            when nothing was appended to the view since; for a view with ``split_by``,
            only the rows of the values the appended rows hold are presented again and
            replaced in it (:func:`_changed`); what it rendered of rows that did not
            change is carried over.
        cache_base: whether a lane view's merged state is kept as the next reload's base
            (``serving.merge_appends``).
        max_age: seconds a base's version may serve for (half the lane log's retention:
            the files appended after it stay that long, :class:`MergedBase`).
        split_from: rows ``previous`` must serve for a view with ``split_by`` to be
            presented again only where a commit touched it (:data:`SPLIT_FROM`); a
            smaller one is merged whole onto the base.

    Returns:
        The snapshot, indexed on the view's key, and the base the next reload merges
        onto (None for a table nothing appends to: a whole table, a batch run's views). A
        new base replaces ``base``, which the caller releases (:func:`released`).
    """
    files = None if base is None else base.appended_since(spark, table, version, max_age)
    fresh = None  # a base this call kept: released if the reload fails
    if base is not None and files is not None:
        served = previous if previous is not None and previous.table == table else None
        if not files and served is not None:
            return served.at(version, now()), base
        if files:
            stamp = commit_stamp(spark, table.path, version)  # before the rows it stands for
            base = base.grown(files, version, stamp)
            if view.split_by and served is not None and len(served) >= split_from:
                appended = table.read_files(spark, files, base.fields)
                changed = _changed(view, served, appended, base.state(spark), version)
                if changed is not None:
                    return changed, base
        folded = base.folded(spark, view)
        if folded.merged is not base.merged:
            fresh = folded.merged
        base = folded
        merged = base.merged
    elif table.part is None or not table.appends or not cache_base:
        merged, base = view.merge(table.read(spark, version)), None
    else:
        stamp = commit_stamp(spark, table.path, version)
        state = table.read(spark, version)
        merged = fresh = kept(view.merge(state))
        base = MergedBase(table, version, stamp, merged, state.schema)
    try:
        rows, schema = _presented_rows(view, merged)
    except BaseException:
        if fresh is not None:
            released(fresh)
        raise
    snapshot = ViewSnapshot(
        name=view.name,
        key=view.key,
        schema=schema,
        rows=rows,
        table=table,
        version=version,
        refreshed_at=now(),
        previous=previous,
        ordered_on=view.order_by,
    )
    return snapshot, base


TOUCHED, SHOWN = "_lk_touched_", "_lk_shown"


def _changed(
    view: View, previous: ViewSnapshot, appended: DataFrame, state: DataFrame, version: int
) -> ViewSnapshot | None:
    """``previous`` with the values of ``view.split_by`` that ``appended`` holds presented again.

    One Spark job, collecting only those values' rows: of the view's ``state`` (the base
    and the files appended since, ``appended`` among them), the rows of the values the
    commit's rows hold (a semi-join on them, broadcast, null-safe), merged and presented;
    and the values themselves, so that a value with nothing shown any more loses its old
    rows. Merging only those rows is exact because ``merge`` combines only rows of one
    value (``View.split_by``). A lane commit at 5,000 events/s touches a few thousand cart
    lines of a view that gains a line per probe user; merging or collecting every row made
    a reload grow with the view. None when the presented columns are not the ones
    ``previous`` holds.
    """
    split = list(view.split_by)
    names = [c.name for c in previous.columns]
    tags = [F.col(c).alias(f"{TOUCHED}{i}") for i, c in enumerate(split)]
    keys = F.broadcast(appended.select(*tags))
    on = [state[c].eqNullSafe(keys[f"{TOUCHED}{i}"]) for i, c in enumerate(split)]
    shown = view.present(view.merge(state.join(keys, on, "left_semi")))
    if names != shown.columns:
        return None
    found = shown.withColumn(SHOWN, F.lit(True)).unionByName(
        appended.select(*tags).withColumn(SHOWN, F.lit(False)), allowMissingColumns=True
    )
    width = len(names)
    out = found.select(*names, *keys.columns, SHOWN).collect()
    return previous.changed(
        split_by=split,
        touched={tuple(row[width:-1]) for row in out if not row[-1]},
        rows=[tuple(row[:width]) for row in out if row[-1]],
        order_by=view.order_by,
        version=version,
        refreshed_at=now(),
    )


def _presented_rows(view: View, merged: DataFrame) -> tuple[list, StructType]:
    """The view's presented rows over its ``merged`` state, in its order, and their schema."""
    presented = view.present(merged)
    if view.order_by:
        # every row goes to this driver anyway: one task sorts them, where a global
        # orderBy would first sample the rows in a job of its own, then shuffle them
        presented = presented.coalesce(1).sortWithinPartitions(*view.order_by)
    return presented.collect(), presented.schema


class Refresher:
    """Owns the SparkSession and the served snapshots; refreshes them every ``interval``."""

    def __init__(
        self,
        settings: Settings,
        registry: ViewRegistry,
        resolve: Resolve,
        *,
        pointers: Sequence[str] | None = None,
        spark: SparkSession | None = None,
        interval: timedelta | float | None = None,
    ) -> None:
        """Prepare (not start) a refresher.

        Args:
            settings: platform settings (mode, storage root, Spark).
            registry: views to serve.
            resolve: finds the serving source (``Platform.serving_source``).
            pointers: tables whose commits can change the source
                (``Platform.watched_tables``); None: resolve again every cycle.
            spark: a session to use; when None one is built on the refresher's thread
                with :func:`lake.spark.build_session` and stopped by :meth:`stop`.
            interval: time between checks (default ``settings.serving.refresh_interval``).
        """
        self.settings = settings
        self.registry = registry
        interval = settings.serving.refresh_interval if interval is None else interval
        self.interval = (
            interval.total_seconds() if isinstance(interval, timedelta) else float(interval)
        )
        self._spark = spark
        self._owns_spark = spark is None
        self._resolve = resolve
        self._pointers = pointers
        self._pointer_versions: dict[str, int | None] | None = None
        self._source: ServingSource | None = None
        self._not_ready: ViewNotReadyError | None = None
        self.idle_after = settings.serving.idle_after.total_seconds()
        self._asked: dict[str, float] = {}
        self._state = ServedState(mode=settings.mode)
        self._published = threading.Condition()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._loaded = threading.Event()
        self._refresh_lock = threading.Lock()
        self._thread: threading.Thread | None = None
        #: view name -> its merged state kept for the next reload (:class:`MergedBase`)
        self._bases: dict[str, MergedBase] = {}

    @property
    def state(self) -> ServedState:
        """The snapshots served right now (one consistent object)."""
        return self._state

    def ask(self, name: str) -> ServedState:
        """The state a request for view ``name`` is answered from; keeps ``name`` reloaded."""
        self._asked[name] = time.monotonic()
        return self._state

    def wait_reloaded(self, name: str, timeout: float) -> ServedState:
        """Wake the refresher and wait (up to ``timeout`` s) until ``name`` is not behind."""
        self.ask(name)
        self._wake.set()
        deadline = time.monotonic() + timeout
        with self._published:
            while name in self._state.behind and (left := deadline - time.monotonic()) > 0:
                self._published.wait(left)
        return self._state

    def _idle(self, name: str) -> bool:
        asked = self._asked.get(name)
        return asked is None or time.monotonic() - asked > self.idle_after

    def _publish(self, state: ServedState) -> None:
        with self._published:
            self._state = state
            self._published.notify_all()

    @property
    def spark(self) -> SparkSession:
        """The session refreshes run on (built on first use if none was given)."""
        if self._spark is None:
            from lake.spark import build_session

            self._spark = build_session(self.settings, app_name="lk-serve")
        return self._spark

    def _moved(self) -> bool:
        """Whether a table that can change the current source moved since it was resolved.

        Which tables those are is the source's own answer (``ServingSource.watched``): a
        Lambda lane on the newest batch run's epoch commits every micro-batch, but only a
        new batch run can change what is served, so its commits cost no resolve. Before
        there is a source, every table in ``pointers`` counts.
        """
        if self._pointers is None or self._pointer_versions is None:
            return True
        watched = (self._source.watched if self._source is not None else ()) or self._pointers
        return any(
            delta_version(self.spark, uri) != self._pointer_versions.get(uri) for uri in watched
        )

    def _current_source(self) -> ServingSource:
        """The serving source; resolved with Spark only when a table that can move it moved."""
        if not self._moved():
            if self._source is not None:
                return self._source
            if self._not_ready is not None:
                raise self._not_ready
        # probed before resolving: a commit that lands while it resolves moves it again
        self._pointer_versions = (
            None
            if self._pointers is None
            else {uri: delta_version(self.spark, uri) for uri in self._pointers}
        )
        self._source, self._not_ready = None, None
        try:
            self._source = self._resolve(self.spark)
        except ViewNotReadyError as err:
            self._not_ready = err
            raise
        return self._source

    def refresh(self) -> bool:
        """One check; reload the views whose table or version changed (idle ones wait).

        Returns:
            Whether any snapshot was (re)loaded.

        Raises:
            Exception: whatever reading failed with, except "nothing to serve yet",
                which is recorded in the state (the previous snapshots stay served).
        """
        with self._refresh_lock:
            try:
                source = self._current_source()
            except ViewNotReadyError as err:
                self._publish(replace(self._state, error=str(err), checked_at=now()))
                return False
            current = self._state.views
            views: dict[str, ViewSnapshot] = {}
            missing: dict[str, str] = {}
            behind: set[str] = set()
            due: list[tuple[View, StateTable, int]] = []
            changed = current.keys() - {v.name for v in self.registry}
            probed: dict[str, int | None] = {}  # a lane keeps every view in one table
            for view in self.registry:
                table = source.tables.get(view.name)
                if table is not None and table.path not in probed:
                    probed[table.path] = delta_version(self.spark, table.path)
                version = None if table is None else probed[table.path]
                if table is None or version is None:
                    missing[view.name] = f"{view.name} is not computed by {source.description}"
                    changed |= {view.name} & current.keys()
                    continue
                old = current.get(view.name)
                if old is not None:
                    moved = old.table != table or old.version != version
                    if moved and self._idle(view.name):
                        behind.add(view.name)
                    if not moved or view.name in behind:
                        views[view.name] = old
                        continue
                due.append((view, table, version))
            for name in missing:
                self._keep_base(name, None)
            for snapshot in self._load(due):
                views[snapshot.name] = snapshot
                changed.add(snapshot.name)
                log.info(
                    "serving %s at version %s of %s",
                    snapshot.name,
                    snapshot.version,
                    snapshot.table,
                )
            self._publish(
                ServedState(
                    mode=self.settings.mode,
                    source=source.description,
                    views=views,
                    missing=missing,
                    checked_at=now(),
                    behind=frozenset(behind),
                )
            )
            if views:
                self._loaded.set()
            self._fold()
            return bool(changed)

    def _fold(self) -> None:
        """Merge the pending files of the bases due into them, once their reload is served.

        A split view's reload merges only the values its commit touched and leaves the
        files it read pending (:class:`MergedBase`); merging them into the base is a job
        over every row of the view, so it runs here, after the answer is published, not
        on the way to it. A fold that fails drops the base: the next reload reads the
        view whole.
        """
        max_age = self.settings.stream.log_retention.total_seconds() / 2
        for name, base in list(self._bases.items()):
            if not base.due(max_age):
                continue
            try:
                self._keep_base(name, base.folded(self.spark, self.registry.get(name)))
            except Exception:
                log.exception("merging the files a reload of %s read into its base failed", name)
                self._keep_base(name, None)

    def _load(self, due: list[tuple[View, StateTable, int]]) -> list[ViewSnapshot]:
        """Load the views due, side by side (module docstring); in registry order.

        Each view's kept base (:class:`MergedBase`) is handed to its reload and
        replaced by what the reload returns; a base no longer used is released.
        """
        current = self._state.views

        def load(job: tuple[View, StateTable, int]) -> Loaded:
            view, table, version = job
            with in_pool(self.spark, LIVE):  # on the threads of the pool below too
                return load_snapshot(
                    self.spark,
                    view,
                    table,
                    version,
                    base=self._bases.get(view.name),
                    previous=current.get(view.name),
                    cache_base=self.settings.serving.merge_appends,
                    max_age=self.settings.stream.log_retention.total_seconds() / 2,
                    split_from=SPLIT_FROM,
                )

        def attempt(job: tuple[View, StateTable, int]) -> Loaded | BaseException:
            try:
                return load(job)
            except BaseException as error:  # raised below, once every load has ended
                return error

        if len(due) <= 1:
            outcomes = [attempt(job) for job in due]
        else:
            with ThreadPoolExecutor(len(due), thread_name_prefix="lk-serving-load") as pool:
                outcomes = list(pool.map(attempt, due))
        loaded = [o for o in outcomes if not isinstance(o, BaseException)]
        failed = [
            (job, o) for job, o in zip(due, outcomes, strict=True) if isinstance(o, BaseException)
        ]
        if failed:
            # nothing of this cycle is published, so no base of it may stay: a base
            # stands for the snapshot served with it
            for snapshot, base in loaded:
                held = self._bases.get(snapshot.name)
                if base is not None and (held is None or held.merged is not base.merged):
                    released(base.merged)
            # a failed view's next reload reads it whole: its base may be what failed (a
            # cluster's executor lost, with the rows it kept)
            for (view, _, _), _ in failed:
                self._keep_base(view.name, None)
            raise failed[0][1]
        for snapshot, base in loaded:
            self._keep_base(snapshot.name, base)
        return [snapshot for snapshot, _ in loaded]

    def _keep_base(self, name: str, base: MergedBase | None) -> None:
        """Make ``base`` view ``name``'s kept state, releasing the one it replaces."""
        old = self._bases.pop(name, None)
        if base is not None:
            self._bases[name] = base
        if old is not None and (base is None or old.merged is not base.merged):
            released(old.merged)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                with in_pool(self.spark, LIVE):  # a reader waits on it (lake.pools)
                    self.refresh()
            except Exception as err:  # keep serving the last good snapshots
                log.exception("serving refresh failed")
                self._publish(replace(self._state, error=f"refresh failed: {err}"))
            self._wake.wait(self.interval)
            self._wake.clear()

    def start(self) -> None:
        """Start refreshing in a daemon thread (the first check runs at once)."""
        if self._thread is not None:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="lk-serving-refresh", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 60.0) -> None:
        """Stop the thread; stop the SparkSession if this refresher built it."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None
        with self._refresh_lock:  # a refresh thread that outlived the join keeps to itself
            for name in list(self._bases):
                self._keep_base(name, None)
        if self._owns_spark and self._spark is not None:
            self._spark.stop()
            self._spark = None

    def wait_until_loaded(self, timeout: float | None = None) -> bool:
        """Block until at least one view is served; False on timeout."""
        return self._loaded.wait(timeout)
