"""A compaction merges what was appended since the last one; older keys are left alone.

Key times here are minutes apart: a compaction's region starts on a whole
:data:`speed_layer.maintenance.REGION_STEP` (ten minutes)."""

from __future__ import annotations

import json
from datetime import datetime

import pytest
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StringType, StructField, StructType, TimestampType
from pyspark.testing import assertDataFrameEqual

from config.settings import with_sections
from lake import storage
from lake.tables import Tables
from speed_layer import lane_log
from speed_layer.epoch import Epoch
from speed_layer.lane import open_lane
from speed_layer.maintenance import compact, pack, region
from views.base import View
from views.registry import ViewRegistry

pytestmark = pytest.mark.integration
EPOCH = Epoch(id="kappa", cutoff={}, base=lambda view: None, keeps_history=False)


def _sum(key: str):
    return lambda state: state.groupBy(key).agg(F.sum("n").alias("n"))


WINDOWED = View(
    name="windowed",
    key=("window_start",),
    compute=lambda events, _ctx: events,
    merge=_sum("window_start"),
    merge_rule="counts add up",
)
PER_USER = View(
    name="per_user",
    key=("user_id",),
    compute=lambda events, _ctx: events,
    merge=_sum("user_id"),
    merge_rule="counts add up",
)
REGISTRY = ViewRegistry([WINDOWED, PER_USER])


def _windowed(spark, rows: list[tuple[str, int]]) -> DataFrame:
    frame = spark.createDataFrame(rows, "at string, n long")
    return frame.select(F.col("at").cast("timestamp").alias("window_start"), "n")


def _append(spark, lane, windowed: list[tuple[str, int]], users: list[tuple[str, int]]) -> int:
    """One micro-batch's contributions to both views, committed as a lane commits them."""
    pieces = [lane_log.state_rows(EPOCH.id, WINDOWED.name, _windowed(spark, windowed))]
    if users:
        frame = spark.createDataFrame(users, "user_id string, n long")
        pieces.append(lane_log.state_rows(EPOCH.id, PER_USER.name, frame))
    lane_log.commit(spark, lane, pieces, keys={v.name: v.key for v in REGISTRY})
    version = lane_log.version(spark, lane)
    assert version is not None
    return version


def _state(spark, lane, view: View) -> DataFrame:
    return lane_log.state_table(lane, EPOCH.id, view.name).read(spark)


def _files(spark, lane, version: int, kind: str) -> dict[str, tuple[str, str]]:
    """The ``windowed`` files commit ``version`` added or removed: path -> (min, max) time."""
    files = {}
    for action in storage.commit_actions(spark, lane.log, version):
        change = action.get(kind)
        if change and change["partitionValues"][lane_log.PART].endswith(WINDOWED.name):
            stats = json.loads(change.get("stats") or "{}")
            span = (stats.get("minValues", {}), stats.get("maxValues", {}))
            files[change["path"]] = tuple(v.get("windowed", {}).get("window_start") for v in span)
    return files


def _operation(spark, lane, version: int) -> str:
    actions = storage.commit_actions(spark, lane.log, version)
    return next(a["commitInfo"]["operation"] for a in actions if "commitInfo" in a)


def _note(spark, lane, version: int) -> str | None:
    actions = storage.commit_actions(spark, lane.log, version)
    return next(a["commitInfo"].get("userMetadata") for a in actions if "commitInfo" in a)


def test_a_compaction_rewrites_the_steps_appended_to_and_leaves_older_ones_alone(
    spark, base_settings, tmp_path
):
    settings = with_sections(base_settings, storage={"root": str(tmp_path)})
    lane = open_lane(spark, Tables.of(settings), "kappa-v1")
    versions = []

    def step(windowed: list[tuple[str, int]], users: list[tuple[str, int]]) -> None:
        _append(spark, lane, windowed, users)
        compacted = compact(spark, lane, REGISTRY, EPOCH, versions[-1] if versions else None)
        assert compacted is not None and _note(spark, lane, compacted) == storage.SAME_ANSWERS
        versions.append(compacted)

    step(
        [("2026-01-01 00:01:00", 1), ("2026-01-01 00:01:00", 2), ("2026-01-01 00:11:00", 3)],
        [("u1", 1)],
    )
    step([("2026-01-01 00:22:00", 4), ("2026-01-01 00:22:00", 5)], [])
    step([("2026-01-01 00:22:00", 6), ("2026-01-01 00:31:00", 7)], [])
    step([("2026-01-01 00:35:00", 8)], [])

    # every key has one row, with the literal sums
    assertDataFrameEqual(
        _state(spark, lane, WINDOWED),
        _windowed(
            spark,
            [
                ("2026-01-01 00:01:00", 3),
                ("2026-01-01 00:11:00", 3),
                ("2026-01-01 00:22:00", 15),
                ("2026-01-01 00:31:00", 7),
                ("2026-01-01 00:35:00", 8),
            ],
        ),
    )
    assertDataFrameEqual(
        _state(spark, lane, PER_USER),
        spark.createDataFrame([("u1", 1)], "user_id string, n long"),
    )

    def added(version: int) -> dict[str, tuple[str, str]]:
        return _files(spark, lane, version, "add")

    def removed(version: int) -> set[str]:
        return set(_files(spark, lane, version, "remove"))

    first, second, third, fourth = versions
    at = "2026-01-01T{}:00.000Z".format
    assert list(added(first).values()) == [(at("00:01"), at("00:11"))]
    # each later one read and rewrote the files appended since and those of the steps
    # they reach, nothing older
    assert removed(second) == set(added(second - 1))
    assert list(added(second).values()) == [(at("00:22"), at("00:22"))]
    assert removed(third) == set(added(second)) | set(added(third - 1))
    assert list(added(third).values()) == [(at("00:22"), at("00:31"))]
    # from 00:30: the rows before split off into a file of their own, written once
    assert removed(fourth) == set(added(third)) | set(added(fourth - 1))
    assert sorted(added(fourth).values()) == [
        (at("00:22"), at("00:22")),
        (at("00:31"), at("00:35")),
    ]
    assert not any(set(added(first)) & removed(v) for v in versions[1:]), "00:00-00:19 untouched"
    for version in versions[1:]:
        actions = storage.commit_actions(spark, lane.log, version)
        assert not any(PER_USER.name in a["remove"]["path"] for a in actions if "remove" in a), (
            "nothing appended to per_user since: left alone"
        )


def test_a_rewrite_other_than_a_compaction_since_means_merge_it_whole(
    spark, base_settings, tmp_path
):
    settings = with_sections(base_settings, storage={"root": str(tmp_path)})
    lane = open_lane(spark, Tables.of(settings), "kappa-v1")
    _append(spark, lane, [("2026-01-01 00:10:00", 1)], [("u1", 1)])
    first = compact(spark, lane, REGISTRY, EPOCH, None)
    part = lane_log.state_part(EPOCH.id, WINDOWED.name)
    rows = _windowed(spark, [("2026-01-01 00:10:00", 1), ("2026-01-01 00:10:00", 1)])
    lane_log.replace(
        spark,
        lane,
        [lane_log.whole(part)],
        [lane_log.state_rows(EPOCH.id, WINDOWED.name, rows)],
        note="a rewrite",
    )
    _append(spark, lane, [("2026-01-01 03:10:00", 2)], [])

    version = compact(spark, lane, REGISTRY, EPOCH, first)

    assert version is not None
    rewritten = set(_files(spark, lane, first + 1, "add"))
    assert rewritten and rewritten <= set(_files(spark, lane, version, "remove")), (
        "the 00:10 rows, rewritten by another commit, read and merged again: whole"
    )
    assertDataFrameEqual(
        _state(spark, lane, WINDOWED),
        _windowed(spark, [("2026-01-01 00:10:00", 2), ("2026-01-01 03:10:00", 2)]),
    )


PER_EVENT = View(
    name="per_event",
    key=("event_id",),
    compute=lambda events, _ctx: events,
    merge=lambda state: state.dropDuplicates(["event_id"]),
    merge_rule="a set of events",
    compaction="pack",
)


def test_a_view_of_a_row_per_event_has_its_files_packed_and_its_rows_kept(
    spark, base_settings, tmp_path
):
    settings = with_sections(base_settings, storage={"root": str(tmp_path)})
    lane = open_lane(spark, Tables.of(settings), "kappa-v1")
    registry = ViewRegistry([WINDOWED, PER_EVENT])
    part = lane_log.state_part(EPOCH.id, PER_EVENT.name)
    copies = [("e1", 1), ("e2", 1), ("e1", 1)]  # e1 appended twice: a merge would drop one
    for event_id, n in copies:
        frame = spark.createDataFrame([(event_id, n)], "event_id string, n long")
        lane_log.commit(spark, lane, [lane_log.state_rows(EPOCH.id, PER_EVENT.name, frame)])
    _append(spark, lane, [("2026-01-01 00:01:00", 1), ("2026-01-01 00:01:00", 2)], [])

    compacted = compact(spark, lane, registry, EPOCH, None)
    pack(spark, lane, registry, EPOCH)

    version = lane_log.version(spark, lane)
    assert compacted is not None and version == compacted + 1
    packing = storage.commit_actions(spark, lane.log, version)
    assert [a["add"]["partitionValues"][lane_log.PART] for a in packing if "add" in a] == [part]
    assert sum("remove" in a for a in packing) == 3  # the three small files, one file now
    # no data changed: readers of what was appended pass it over
    assert _operation(spark, lane, version) == "OPTIMIZE"
    assert not any(a[k]["dataChange"] for a in packing for k in ("add", "remove") if k in a)
    assert storage.appended(spark, lane.log, compacted, version, {lane_log.PART: part}) == []
    assertDataFrameEqual(
        _state(spark, lane, PER_EVENT),
        spark.createDataFrame(copies, "event_id string, n long"),  # every row kept
    )
    assertDataFrameEqual(  # the windowed view merged, the per-event one left to the packing
        _state(spark, lane, WINDOWED), _windowed(spark, [("2026-01-01 00:01:00", 3)])
    )


@pytest.mark.unit
def test_the_region_starts_on_the_step_of_the_earliest_key_appended():
    def added(*earliest: str) -> list[dict]:
        stats = '{{"minValues": {{"v": {{"t": "{}"}}}}}}'
        return [{"path": f"f{i}", "stats": stats.format(at)} for i, at in enumerate(earliest)]

    assert region(added("2026-01-01T02:40:00.000Z", "2026-01-01T01:59:59.999Z"), "v.t") == (
        datetime(2026, 1, 1, 1, 50)
    )
    assert region(None, "v.t") is None, "not known what was appended: whole"
    assert region(added("2026-01-01T02:40:00.000Z"), None) is None, "no time key: whole"
    assert region([{"path": "f", "stats": "{}"}], "v.t") is None, "no statistics: whole"


TYPES = {"timestamp": TimestampType(), "long": LongType(), "string": StringType()}


@pytest.mark.unit
@pytest.mark.parametrize(
    ("fields", "key", "column"),
    [
        ("window_start timestamp, window_end timestamp, n long", ("window_start",), "window_start"),
        ("user_id long, session_start timestamp", ("user_id", "session_start"), "session_start"),
        (
            "user_id long, event_id string, purchased_at timestamp",
            ("user_id", "burst_at"),
            "purchased_at",
        ),
        ("user_id long, product_id long, updated_at timestamp", ("user_id", "product_id"), None),
        ("product_id long, in_carts long", ("product_id",), None),
    ],
    ids=["a window", "a session", "one row per event", "one row per key, no time in it", "no time"],
)
def test_the_time_a_compaction_splits_on_is_the_keys_or_the_events(fields, key, column):
    named = (field.split() for field in fields.split(", "))
    schema = StructType([StructField(name, TYPES[kind]) for name, kind in named])

    assert lane_log.time_key(schema, key) == column
