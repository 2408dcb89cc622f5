"""A reload after appends reads the appended files alone and serves what a full read serves."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from config.settings import load_settings
from lake.source import PART, ServingSource, StateTable
from lake.storage import SAME_ANSWERS, delta_version
from serving_layer.refresh import Refresher, load_snapshot
from views.base import View
from views.registry import ViewRegistry

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


def _rows(snapshot) -> list[tuple]:
    return [tuple(row) for row in snapshot._rows]


def test_appends_are_merged_onto_the_cached_base_and_serve_what_a_full_read_serves(
    spark, tmp_path: Path
):
    path = str(tmp_path / "log")
    table = StateTable(path, STATE, "counts")
    first = _write(spark, path, STATE, [("a", 1), ("b", 2)])
    snapshot, base = load_snapshot(spark, COUNTS, table, first)
    assert base is not None and base.version == first and base.appended == ()

    second = _write(spark, path, STATE, [("a", 2), ("c", 5)])
    third = _write(spark, path, STATE, [("c", 1)])
    merged, after = load_snapshot(spark, COUNTS, table, third, base=base, previous=snapshot)
    full, whole = load_snapshot(spark, COUNTS, table, third, cache_base=False)

    assert _rows(merged) == [("a", 3), ("b", 2), ("c", 6)] == _rows(full)
    assert merged.version == third
    assert after is not None and after.merged is base.merged, "the base stays; no re-read"
    assert after.version == first and len(after.appended) == 2
    assert whole is None, "not cached: nothing to release"
    assert table.appended_files(spark, first, second) == [after.appended[0]]
    base.merged.unpersist()


def test_a_commit_to_another_part_keeps_the_rows_and_moves_the_version(spark, tmp_path: Path):
    path = str(tmp_path / "log")
    table = StateTable(path, STATE, "counts")
    first = _write(spark, path, STATE, [("a", 1)])
    snapshot, base = load_snapshot(spark, COUNTS, table, first)

    other = _write(spark, path, "retained", [("x", 9)])
    kept, after = load_snapshot(spark, COUNTS, table, other, base=base, previous=snapshot)

    assert kept.version == other and _rows(kept) == [("a", 1)]
    assert kept._rows is snapshot._rows, "nothing appended to the view: no Spark job"
    assert after is base

    # the same with no snapshot to keep (the view was not served): the base alone
    fresh, again = load_snapshot(spark, COUNTS, table, other, base=base)
    assert _rows(fresh) == [("a", 1)] and again is not None and again.merged is base.merged
    base.merged.unpersist()


def test_a_compaction_noted_same_answers_is_passed_over(spark, tmp_path: Path):
    """A lane's compaction merges rows without changing an answer: nothing is re-read, and
    the files it removed are still read where they are."""
    path = str(tmp_path / "log")
    table = StateTable(path, STATE, "counts")
    first = _write(spark, path, STATE, [("a", 1), ("a", 2)])
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
    assert after is not None and after.merged is base.merged, "no whole read"
    base.merged.unpersist()


def test_a_base_older_than_half_the_retention_is_read_whole_again(spark, tmp_path: Path):
    """Files a compaction removed are deleted once older than the log's retention."""
    path = str(tmp_path / "log")
    table = StateTable(path, STATE, "counts")
    first = _write(spark, path, STATE, [("a", 1)])
    _, base = load_snapshot(spark, COUNTS, table, first)
    assert base is not None
    second = _write(spark, path, STATE, [("a", 1)])

    _, kept = load_snapshot(spark, COUNTS, table, second, base=base, max_age=3600)
    reread, after = load_snapshot(spark, COUNTS, table, second, base=base, max_age=0)

    assert kept is not None and kept.merged is base.merged
    assert _rows(reread) == [("a", 2)]
    assert after is not None and after.merged is not base.merged, "read whole"
    base.merged.unpersist()
    after.merged.unpersist()


def test_a_compaction_of_the_view_reads_it_whole_into_a_new_base(spark, tmp_path: Path):
    path = str(tmp_path / "log")
    table = StateTable(path, STATE, "counts")
    first = _write(spark, path, STATE, [("a", 1), ("a", 2)])
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
    base.merged.unpersist()
    after.merged.unpersist()


@pytest.mark.parametrize("merge_appends", [True, False])
def test_the_refresher_serves_each_commit_and_keeps_a_base_between_rewrites(
    spark, tmp_path: Path, merge_appends: bool
):
    path = str(tmp_path / "log")
    table = StateTable(path, STATE, "counts")
    first = _write(spark, path, STATE, [("a", 1)])
    refresher = Refresher(
        load_settings(serving={"merge_appends": merge_appends}),
        ViewRegistry([COUNTS]),
        lambda _spark: ServingSource("a lane", {"counts": table}),
        spark=spark,
        interval=3600,
    )

    def served() -> list[tuple]:
        refresher.ask("counts")  # asked for: reloaded on every commit, never left behind
        refresher.refresh()
        return _rows(refresher.state.views["counts"])

    assert served() == [("a", 1)]
    first_base = refresher._bases.get("counts")
    _write(spark, path, STATE, [("a", 1), ("b", 4)])
    assert served() == [("a", 2), ("b", 4)]
    _write(spark, path, STATE, [("b", 1)], mode="overwrite", replaceWhere=f"{PART} = '{STATE}'")
    assert served() == [("b", 1)]
    _write(spark, path, STATE, [("c", 7)])
    assert served() == [("b", 1), ("c", 7)]

    after = refresher._bases.get("counts")
    if merge_appends:
        assert first_base is not None and first_base.version == first
        assert not first_base.merged.is_cached, "the rewrite's whole read replaced it"
        assert after is not None and after.version == first + 2 and len(after.appended) == 1
    else:
        assert first_base is None and after is None
    refresher.stop()
    assert not refresher._bases
    if after is not None:
        assert not after.merged.is_cached
