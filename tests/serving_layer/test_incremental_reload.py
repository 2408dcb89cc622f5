"""A reload after appends reads the appended files alone and serves what a full read serves."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from config.settings import Settings, ViewSettings, load_settings
from lake.kept import released
from lake.source import PART, ServingSource, StateTable
from lake.storage import SAME_ANSWERS, delta_version
from serving_layer import refresh
from serving_layer.refresh import Refresher, load_snapshot
from tests.support.cache import holds
from tests.support.workload import assert_view_matches, oracle_views, view_inputs
from views import default_registry
from views.base import View
from views.registry import ViewRegistry
from workload.generator import WorkloadSpec

pytestmark = pytest.mark.integration

STATE = "state/e1/counts"


def _sum(state: DataFrame) -> DataFrame:
    return state.groupBy("key").agg(F.sum("n").alias("n"))


COUNTS = View(
    name="counts",
    key=("key",),
    compute=lambda events, _ctx: events,
    merge=_sum,
    merge_rule="counts add up",
    order_by=("key",),
)


def _write(spark: SparkSession, path: str, part: str, rows: list[tuple[str, int]], **how) -> int:
    """Rows of ``part`` as a lane's log holds them (a struct column per kind, one file per
    part per commit); the new version."""
    frame = (
        spark.createDataFrame(rows, "key string, n long")
        .select(F.lit(part).alias(PART), F.struct("key", "n").alias("counts"))
        .coalesce(1)
    )
    writer = frame.write.format("delta").partitionBy(PART).mode(how.pop("mode", "append"))
    for key, value in how.items():
        writer = writer.option(key, value)
    writer.save(path)
    version = delta_version(spark, path)
    assert version is not None
    return version


def _logged(
    spark: SparkSession, tmp_path: Path, rows: list[tuple[str, int]]
) -> tuple[str, StateTable, int]:
    """A lane's log with one commit of ``rows`` to the view's part: path, table, version."""
    path = str(tmp_path / "log")
    return path, StateTable(path, STATE, "counts"), _write(spark, path, STATE, rows)


def _refresher(
    spark: SparkSession, view: View, table: StateTable, settings: Settings | None = None
) -> Refresher:
    """A refresher of one view over one lane's table, reloading only when told."""
    return Refresher(
        settings or load_settings(),
        ViewRegistry([view]),
        lambda _spark: ServingSource("a lane", {"counts": table}),
        spark=spark,
        interval=3600,
    )


def _rows(snapshot) -> list[tuple]:
    return [tuple(row) for row in snapshot._rows]


def _served(refresher: Refresher) -> list[tuple]:
    """The rows of ``counts`` once the refresher has reloaded it, asked for first (so
    reloaded on every commit, never left behind as idle)."""
    refresher.ask("counts")
    refresher.refresh()
    return _rows(refresher.state.views["counts"])


def test_appends_are_merged_onto_the_kept_base_and_serve_what_a_full_read_serves(
    spark, tmp_path: Path
):
    path, table, first = _logged(spark, tmp_path, [("a", 1), ("b", 2)])
    snapshot, base = load_snapshot(spark, COUNTS, table, first)
    assert base is not None and base.version == first

    _write(spark, path, STATE, [("a", 2), ("c", 5)])
    third = _write(spark, path, STATE, [("c", 1)])
    merged, after = load_snapshot(spark, COUNTS, table, third, base=base, previous=snapshot)
    full, whole = load_snapshot(spark, COUNTS, table, third, cache_base=False)

    assert _rows(merged) == [("a", 3), ("b", 2), ("c", 6)] == _rows(full)
    assert merged.version == third
    assert after is not None and after.version == third, "what it merged is the next base"
    assert after.merged is not base.merged
    assert whole is None, "not cached: nothing to release"

    fourth = _write(spark, path, STATE, [("b", 1)])
    again, last = load_snapshot(spark, COUNTS, table, fourth, base=after, previous=merged)
    assert _rows(again) == [("a", 3), ("b", 3), ("c", 6)]
    assert last is not None and last.version == fourth
    for held in (base, after, last):
        released(held.merged)


def test_a_kept_base_needs_none_of_the_files_it_was_read_from(spark, tmp_path: Path):
    """A VACUUM of the files a compaction replaced cannot take a base's rows from under it."""
    path, table, first = _logged(spark, tmp_path, [("a", 1), ("b", 2)])
    _, base = load_snapshot(spark, COUNTS, table, first)
    assert base is not None
    second = _write(spark, path, STATE, [("a", 5)])
    _, after = load_snapshot(spark, COUNTS, table, second, base=base)
    assert after is not None

    for data in Path(path).rglob("*.parquet"):
        data.unlink()

    assert sorted(tuple(r) for r in after.merged.collect()) == [("a", 6), ("b", 2)]
    assert sorted(tuple(r) for r in base.merged.collect()) == [("a", 1), ("b", 2)]
    for held in (base, after):
        released(held.merged)


def test_a_base_older_than_half_the_retention_is_read_whole_again(spark, tmp_path: Path):
    """The files appended after it may have been replaced and deleted since."""
    path, table, first = _logged(spark, tmp_path, [("a", 1)])
    _, base = load_snapshot(spark, COUNTS, table, first)
    assert base is not None
    second = _write(spark, path, STATE, [("a", 1)])

    _, merged = load_snapshot(spark, COUNTS, table, second, base=base, max_age=3600)
    reread, whole = load_snapshot(spark, COUNTS, table, second, base=base, max_age=0)

    assert merged is not None and base.appended_since(spark, table, second, 3600) is not None
    assert _rows(reread) == [("a", 2)]
    assert whole is not None and base.appended_since(spark, table, second, 0) is None
    for held in (base, merged, whole):
        released(held.merged)


def test_a_table_written_once_is_read_whole_with_no_base_kept(spark, tmp_path: Path):
    """A batch run's views table: nothing appends to it, so no state is kept to merge onto."""
    path, _, version = _logged(spark, tmp_path, [("a", 1), ("a", 2)])
    once = StateTable(path, STATE, "counts", appends=False)

    snapshot, base = load_snapshot(spark, COUNTS, once, version)

    assert _rows(snapshot) == [("a", 3)] and base is None


def test_a_commit_to_another_part_keeps_the_rows_and_moves_the_version(spark, tmp_path: Path):
    path, table, first = _logged(spark, tmp_path, [("a", 1)])
    snapshot, base = load_snapshot(spark, COUNTS, table, first)

    other = _write(spark, path, "retained", [("x", 9)])
    kept, after = load_snapshot(spark, COUNTS, table, other, base=base, previous=snapshot)

    assert kept.version == other and _rows(kept) == [("a", 1)]
    assert kept._rows is snapshot._rows, "nothing appended to the view: no Spark job"
    assert after is base

    # the same with no snapshot to keep (the view was not served): the base alone
    fresh, again = load_snapshot(spark, COUNTS, table, other, base=base)
    assert _rows(fresh) == [("a", 1)] and again is not None and again.merged is base.merged
    released(base.merged)


def test_a_compaction_noted_same_answers_is_passed_over(spark, tmp_path: Path):
    """A lane's compaction merges rows without changing an answer: nothing is re-read, and
    the files it removed are still read where they are."""
    path, table, first = _logged(spark, tmp_path, [("a", 1), ("a", 2)])
    snapshot, base = load_snapshot(spark, COUNTS, table, first)
    assert base is not None
    appended = _write(spark, path, STATE, [("b", 1)])
    compacted = _write(
        spark,
        path,
        STATE,
        [("a", 3), ("b", 1)],
        mode="overwrite",
        replaceWhere=f"{PART} = '{STATE}'",
        userMetadata=SAME_ANSWERS,
    )

    files = table.appended_files(spark, first, compacted)
    assert files is not None and files == table.appended_files(spark, first, appended)
    merged, after = load_snapshot(spark, COUNTS, table, compacted, base=base, previous=snapshot)
    assert _rows(merged) == [("a", 3), ("b", 1)]
    assert after is not None and after.version == compacted, "merged onto the base, no whole read"
    for held in (base, after):
        released(held.merged)


def test_a_compaction_of_the_view_reads_it_whole_into_a_new_base(spark, tmp_path: Path):
    path, table, first = _logged(spark, tmp_path, [("a", 1), ("a", 2)])
    snapshot, base = load_snapshot(spark, COUNTS, table, first)
    assert base is not None

    compacted = _write(
        spark,
        path,
        STATE,
        [("a", 3), ("b", 1)],
        mode="overwrite",
        replaceWhere=f"{PART} = '{STATE}'",
    )
    assert table.appended_files(spark, first, compacted) is None
    reloaded, after = load_snapshot(spark, COUNTS, table, compacted, base=base, previous=snapshot)

    assert _rows(reloaded) == [("a", 3), ("b", 1)]
    assert after is not None and after.version == compacted and after.merged is not base.merged
    for held in (base, after):
        released(held.merged)


@pytest.mark.parametrize("merge_appends", [True, False])
def test_the_refresher_serves_each_commit_and_keeps_a_base_between_rewrites(
    spark, tmp_path: Path, merge_appends: bool
):
    path, table, first = _logged(spark, tmp_path, [("a", 1)])
    refresher = _refresher(
        spark, COUNTS, table, load_settings(serving={"merge_appends": merge_appends})
    )

    assert _served(refresher) == [("a", 1)]
    first_base = refresher._bases.get("counts")
    _write(spark, path, STATE, [("a", 1), ("b", 4)])
    assert _served(refresher) == [("a", 2), ("b", 4)]
    _write(spark, path, STATE, [("b", 1)], mode="overwrite", replaceWhere=f"{PART} = '{STATE}'")
    assert _served(refresher) == [("b", 1)]
    _write(spark, path, STATE, [("c", 7)])
    assert _served(refresher) == [("b", 1), ("c", 7)]

    after = refresher._bases.get("counts")
    if merge_appends:
        assert first_base is not None and first_base.version == first
        assert not holds(spark, first_base.merged), "each reload's base replaced it"
        assert after is not None and after.version == first + 3, "the last reload's state"
    else:
        assert first_base is None and after is None
    refresher.stop()
    assert not refresher._bases
    if after is not None:
        assert not holds(spark, after.merged)


def test_a_base_that_lost_its_rows_fails_one_reload_and_the_next_reads_the_view_whole(
    spark, tmp_path: Path
):
    """As when a cluster's executor that kept a base's rows is lost."""
    path, table, _ = _logged(spark, tmp_path, [("a", 1)])
    refresher = _refresher(spark, COUNTS, table)
    refresher.ask("counts")
    refresher.refresh()
    released(refresher._bases["counts"].merged)  # its rows gone from the session
    _write(spark, path, STATE, [("a", 2)])

    with pytest.raises(Exception, match=r"(?i)checkpoint"):
        refresher.refresh()
    assert "counts" not in refresher._bases
    assert _rows(refresher.state.views["counts"]) == [("a", 1)], "the last good rows"

    refresher.refresh()
    assert _rows(refresher.state.views["counts"]) == [("a", 3)]
    refresher.stop()


@pytest.fixture(scope="module")
def workload(spark):
    return view_inputs(spark, WorkloadSpec(events=3_000, users=40, products=20, seed=11))


@pytest.mark.parametrize("name", [view.name for view in default_registry() if view.split_by])
def test_a_split_view_presents_again_only_what_each_commit_touched_and_serves_the_oracle(
    spark, tmp_path: Path, workload, name: str, monkeypatch
):
    """Three commits of a view's partial results; each reload after the first merges onto
    the base and presents only the values its rows hold (``View.split_by``), never the
    whole view: the rows, in their order, are what a whole read serves, and the oracle's."""
    events, catalog, frame, ctx = workload
    view = default_registry().get(name)
    path, part = str(tmp_path / "log"), f"state/e1/{name}"
    table = StateTable(path, part, name)

    def commit(k: int) -> int:
        state = view.compute(frame.where(F.col("offset") % 3 == k), ctx)
        logged = state.select(F.lit(part).alias(PART), F.struct(*state.columns).alias(name))
        logged.coalesce(1).write.format("delta").partitionBy(PART).mode("append").save(path)
        version = delta_version(spark, path)
        assert version is not None
        return version

    snapshot, base = load_snapshot(spark, view, table, commit(0))
    wholes = []
    whole_read = refresh._presented_rows
    monkeypatch.setattr(refresh, "_presented_rows", lambda *a: wholes.append(a) or whole_read(*a))
    for k in (1, 2):
        version = commit(k)
        assert base is not None
        snapshot, after = load_snapshot(spark, view, table, version, base=base, previous=snapshot)
        assert after is not None and after.at == version and after.merged is base.merged
        assert len(after.pending) == 1, "the file read waits to be merged into the base"
        base = after
        if k == 1:  # as the refresher does once a reload is served: the next one reads less
            folded = base.folded(spark, view)
            assert folded.version == version and folded.pending == ()
            released(base.merged)
            base = folded
    assert wholes == [], "no reload after a commit presented the whole view"
    whole, _ = load_snapshot(spark, view, table, version, cache_base=False)

    assert _rows(snapshot) == _rows(whole)
    served = spark.createDataFrame(_rows(snapshot), view.evaluate(frame, ctx).schema)
    assert_view_matches(served, oracle_views(events, catalog, ViewSettings())[name], name)
    assert base is not None
    released(base.merged)


def test_the_refresher_merges_a_split_views_pending_files_into_its_base_once_served(
    spark, tmp_path: Path, monkeypatch
):
    """A split view's reload leaves the files it read pending; after ``FOLD_AFTER`` of
    them the refresher merges them into the base, and later reloads serve the same."""
    split = dataclasses.replace(COUNTS, split_by=("key",))
    path, table, _ = _logged(spark, tmp_path, [("a", 1), ("b", 2)])
    refresher = _refresher(spark, split, table)
    monkeypatch.setattr(refresh, "FOLD_AFTER", 2)
    monkeypatch.setattr(refresh, "SPLIT_FROM", 0)

    assert _served(refresher) == [("a", 1), ("b", 2)]
    first = refresher._bases["counts"]
    _write(spark, path, STATE, [("a", 2)])
    assert _served(refresher) == [("a", 3), ("b", 2)]
    pending = refresher._bases["counts"]
    assert len(pending.pending) == 1 and pending.merged is first.merged
    newest = _write(spark, path, STATE, [("c", 4), ("b", 1)])
    assert _served(refresher) == [("a", 3), ("b", 3), ("c", 4)]
    folded = refresher._bases["counts"]
    assert folded.pending == () and folded.version == newest
    assert sorted(tuple(r) for r in folded.merged.collect()) == [("a", 3), ("b", 3), ("c", 4)]
    assert not holds(spark, first.merged), "the base folded into is released"
    _write(spark, path, STATE, [("d", 1)])
    assert _served(refresher) == [("a", 3), ("b", 3), ("c", 4), ("d", 1)]
    refresher.stop()


def test_a_split_view_serving_fewer_rows_than_split_from_is_merged_whole_on_each_reload(
    spark, tmp_path: Path, monkeypatch
):
    """Below ``SPLIT_FROM`` rows a split view's reload merges the files it read into the
    base at once, as a view without ``split_by`` does: no file waits beside it."""
    split = dataclasses.replace(COUNTS, split_by=("key",))
    path, table, _ = _logged(spark, tmp_path, [("a", 1), ("b", 2)])
    refresher = _refresher(spark, split, table)
    monkeypatch.setattr(refresh, "SPLIT_FROM", 3)

    assert _served(refresher) == [("a", 1), ("b", 2)]
    newest = _write(spark, path, STATE, [("a", 2), ("c", 1)])
    assert _served(refresher) == [("a", 3), ("b", 2), ("c", 1)]
    whole = refresher._bases["counts"]
    assert whole.pending == () and whole.version == newest, "two rows served: merged whole"
    _write(spark, path, STATE, [("b", 5)])
    assert _served(refresher) == [("a", 3), ("b", 7), ("c", 1)]
    assert len(refresher._bases["counts"].pending) == 1, "three rows served: split"
    refresher.stop()
