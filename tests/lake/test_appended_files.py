"""What commits added to a table's partition, read from the commit files alone."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from lake import storage

pytestmark = pytest.mark.unit

NOT_ASKED: Any = SimpleNamespace()  # local tables are read from disk; Spark is never asked
STATE = {"part": "state/e1/counts"}
OTHER = {"part": "retained"}


def _commit(table: Path, version: int, *actions: dict, info: dict | None = None) -> None:
    log = table / "_delta_log"
    log.mkdir(parents=True, exist_ok=True)
    lines = [{"commitInfo": info or {"operation": "WRITE"}}, *actions]
    (log / f"{version:020d}.json").write_text("".join(json.dumps(a) + "\n" for a in lines))


def _add(path: str, partition: dict, **more: Any) -> dict:
    return {"add": {"path": path, "partitionValues": partition, "dataChange": True, **more}}


def _remove(path: str, partition: dict) -> dict:
    return {"remove": {"path": path, "partitionValues": partition, "dataChange": True}}


def _appended(table: Path, since: int, until: int) -> list[str] | None:
    return storage.appended_files(NOT_ASKED, str(table), since, until, STATE)


def test_appends_to_the_partition_are_listed_in_commit_order_with_their_paths_decoded(tmp_path):
    _commit(tmp_path, 1, _add("part=state%252Fe1%252Fcounts/a.parquet", STATE))
    _commit(tmp_path, 2, _add("part=retained/r.parquet", OTHER), _remove("part=retained/q", OTHER))
    _commit(tmp_path, 3, _add("part=state%252Fe1%252Fcounts/b.parquet", STATE))

    assert _appended(tmp_path, 0, 3) == [
        f"{tmp_path}/part=state%2Fe1%2Fcounts/a.parquet",
        f"{tmp_path}/part=state%2Fe1%2Fcounts/b.parquet",
    ]
    assert _appended(tmp_path, 1, 2) == [], "a commit to another partition adds nothing here"
    assert _appended(tmp_path, 3, 3) == []


@pytest.mark.parametrize(
    "change",
    [
        _remove("part=state%252Fe1%252Fcounts/a.parquet", STATE),
        _add("part=state%252Fe1%252Fcounts/c.parquet", STATE, deletionVector={"cardinality": 1}),
        {"metaData": {"schemaString": "{}"}},
        {"protocol": {"minReaderVersion": 3}},
        {"remove": {"path": "part=state%252Fe1%252Fcounts/a.parquet", "dataChange": True}},
        _add("part=state%252Fe1%252Fcounts/a.parquet", STATE, dataChange=False),
        _add("part=state%252Fe1%252Fcounts/a[1].parquet", STATE),
    ],
    ids=[
        "removed",
        "deletion vector",
        "schema",
        "protocol",
        "removed, partition not said",
        "added again, no data change",
        "a path Spark reads as a pattern",
    ],
)
def test_anything_but_an_append_to_the_partition_means_read_it_whole(tmp_path, change):
    _commit(tmp_path, 1, _add("part=state%252Fe1%252Fcounts/a.parquet", STATE))
    _commit(tmp_path, 2, change)

    assert _appended(tmp_path, 0, 1) is not None
    assert _appended(tmp_path, 0, 2) is None


def test_a_commit_file_no_longer_kept_means_read_it_whole(tmp_path):
    _commit(tmp_path, 2, _add("part=state%252Fe1%252Fcounts/b.parquet", STATE))

    assert _appended(tmp_path, 0, 2) is None


def test_more_files_than_asked_for_means_read_it_whole(tmp_path):
    for version in (1, 2, 3):
        _commit(tmp_path, version, _add(f"part=state%252Fe1%252Fcounts/{version}.parquet", STATE))

    assert storage.appended_files(NOT_ASKED, str(tmp_path), 0, 3, STATE, most=3) is not None
    assert storage.appended_files(NOT_ASKED, str(tmp_path), 0, 3, STATE, most=2) is None


def test_a_commit_is_told_from_one_with_the_same_number_in_a_table_written_again(tmp_path):
    _commit(tmp_path, 0, _add("a.parquet", STATE))
    first = storage.commit_stamp(NOT_ASKED, str(tmp_path), 0)
    (tmp_path / "_delta_log" / f"{0:020d}.json").write_text(
        json.dumps({"commitInfo": {"operation": "WRITE", "txnId": "another"}}) + "\n"
    )

    assert first is not None
    assert storage.commit_stamp(NOT_ASKED, str(tmp_path), 0) not in (first, None)
    assert storage.commit_stamp(NOT_ASKED, str(tmp_path), 1) is None


def test_a_commit_noted_same_answers_is_passed_over_with_the_files_it_removed(tmp_path):
    """A lane's compaction: readers that merge keep the files they listed (still on disk)."""
    _commit(tmp_path, 1, _add("part=state%252Fe1%252Fcounts/a.parquet", STATE))
    _commit(
        tmp_path,
        2,
        _remove("part=state%252Fe1%252Fcounts/a.parquet", STATE),
        _add("part=state%252Fe1%252Fcounts/merged.parquet", STATE),
        info={"operation": "WRITE", "userMetadata": storage.SAME_ANSWERS},
    )
    _commit(tmp_path, 3, _add("part=state%252Fe1%252Fcounts/b.parquet", STATE))

    assert _appended(tmp_path, 0, 3) == [
        f"{tmp_path}/part=state%2Fe1%2Fcounts/a.parquet",
        f"{tmp_path}/part=state%2Fe1%2Fcounts/b.parquet",
    ]


def test_a_packing_of_files_that_changes_no_data_is_passed_over(tmp_path):
    """Delta's OPTIMIZE: the same rows in other files, every action without a data change."""
    _commit(tmp_path, 1, _add("part=state%252Fe1%252Fcounts/a.parquet", STATE))
    removed = _remove("part=state%252Fe1%252Fcounts/a.parquet", STATE)["remove"]
    _commit(
        tmp_path,
        2,
        {"remove": {**removed, "dataChange": False}},
        _add("part=state%252Fe1%252Fcounts/packed.parquet", STATE, dataChange=False),
        info={"operation": "OPTIMIZE"},
    )
    _commit(tmp_path, 3, _add("part=state%252Fe1%252Fcounts/b.parquet", STATE))

    assert _appended(tmp_path, 0, 3) == [
        f"{tmp_path}/part=state%2Fe1%2Fcounts/a.parquet",
        f"{tmp_path}/part=state%2Fe1%2Fcounts/b.parquet",
    ]
