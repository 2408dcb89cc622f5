"""Every serving view against the oracle: events lost or doubled, rows nothing explains.

Served rows come through the platform the wiring builds (what ``lk query`` reads); the
expectation is :func:`oracle.served_views` over the raw log, given the lane's own
micro-batch boundaries (the contract's lateness) and the served batch cutoff.
Events lost or doubled are read off ``events_by_type``, where every event adds one to
each of its ``hop_window / hop_slide`` windows; every other difference of any view is
counted as an unexplained row.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

from pyspark.sql import DataFrame, SparkSession

import oracle
from config.settings import Settings
from designs.platform import build
from lake.tables import Tables
from oracle import consume_all
from speed_layer import progress
from speed_layer.lane import find_lane

APPROX = "distinct_users_approx"
APPROX_TOLERANCE = 0.05


@dataclass
class ViewCheck:
    """What the comparison found."""

    events_checked: int = 0
    lost: int = 0
    duplicated: int = 0
    unexplained: int = 0
    per_view: dict[str, int] = field(default_factory=dict)

    def describe(self) -> str:
        """One line for the notes."""
        bad = {k: v for k, v in self.per_view.items() if v}
        return (
            f"{self.events_checked} events checked; lost {self.lost}, duplicated "
            f"{self.duplicated}, unexplained rows {self.unexplained}" + (f" {bad}" if bad else "")
        )


def lane_batches(spark: SparkSession, settings: Settings, lane: str) -> list[oracle.MicroBatch]:
    """The lane's committed micro-batches: offset ranges and the cutoff each ran under."""
    found = find_lane(spark, Tables.of(settings), lane)
    if found is None:
        return []
    return [
        oracle.MicroBatch(row.start_offsets, row.end_offsets, row.cutoff)
        for row in progress.history(spark, found)
        if row.kind == "micro-batch"
    ]


def _rows(frame: DataFrame, columns: list[str]) -> list[tuple]:
    return [tuple(r) for r in frame.select(columns).collect()]


def compare_view(
    spark: SparkSession, actual: DataFrame, expected: list[dict], key: tuple[str, ...]
) -> tuple[int, list[tuple], list[tuple], list[str]]:
    """``(differing keys, served rows, expected rows, columns)`` of one view.

    The expected rows go through Spark with the served schema, so both sides carry the
    same Python types; the HLL column must be within 5% of the exact count instead.
    """
    columns = [c for c in actual.columns if c != APPROX]
    schema = actual.select(columns).schema
    want = spark.createDataFrame([tuple(r[c] for c in columns) for r in expected], schema)
    got_rows, want_rows = _rows(actual, columns), _rows(want, columns)
    missing = Counter(want_rows) - Counter(got_rows)
    extra = Counter(got_rows) - Counter(want_rows)
    at = [columns.index(c) for c in key]
    keys = {tuple(r[i] for i in at) for r in (*missing, *extra)}
    if APPROX in actual.columns:
        for row in actual.select("distinct_users", APPROX).collect():
            exact, approx = row[0], row[1]
            if exact and abs(approx - exact) / exact > APPROX_TOLERANCE:
                keys.add(("hll", exact, approx))
    return len(keys), got_rows, want_rows, columns


def _event_counts(rows: list[tuple], columns: list[str]) -> Counter[tuple]:
    at = [columns.index(c) for c in ("window_start", "window_end", "event_type")]
    n = columns.index("events")
    return Counter({tuple(r[i] for i in at): r[n] for r in rows})


def check_served(
    spark: SparkSession,
    settings: Settings,
    lane: str | None,
    *,
    cutoff: Mapping[int, int] | None = None,
    catalog_cutoff: Mapping[int, int] | None = None,
) -> ViewCheck:
    """Compare what readers are served with the oracle.

    Args:
        spark: the session to read with.
        settings: where the platform runs (its ``mode`` picks the serving source).
        lane: the streaming lane whose micro-batches decide lateness; ``None`` when only
            a batch run serves (then only the events below ``cutoff`` count).
        cutoff: the served batch run's cutoff (Lambda).
        catalog_cutoff: the catalog offsets that run joined with (default: all).
    """
    events = consume_all(settings, settings.kafka.events_topic)
    if lane is None and cutoff is not None:
        events = [e for e in events if e.offset < cutoff.get(e.partition, 0)]
    catalog_log = consume_all(settings, settings.kafka.catalog_topic)
    catalog = oracle.catalog_state(catalog_log)
    joined: Mapping[str, dict[int, str]] | dict[int, str] = catalog
    if cutoff is not None:
        batch = catalog
        if catalog_cutoff is not None:
            batch = oracle.catalog_state(
                r for r in catalog_log if r.offset < catalog_cutoff.get(r.partition, 0)
            )
        # with no lane, nothing has read the catalog past the batch run's cutoff
        joined = {"batch": batch, "speed": catalog if lane is not None else batch}
    batches = lane_batches(spark, settings, lane) if lane else []
    history = oracle.catalog_history(catalog_log)
    expected = oracle.served_views(events, joined, settings.views, batches, cutoff, history)
    decoded, _ = oracle.decode(events)
    check = ViewCheck(events_checked=len(oracle.dedup(decoded)))
    platform = build(settings)
    for view in platform.registry:
        actual = platform.read(spark, view.name)
        differing, got, want, columns = compare_view(
            spark, actual, expected[view.name], tuple(view.key)
        )
        check.per_view[view.name] = differing
        check.unexplained += differing
        if view.name == "events_by_type":
            hops = settings.views.hop_window // settings.views.hop_slide
            served, wanted = _event_counts(got, columns), _event_counts(want, columns)
            check.lost += math.ceil(sum((wanted - served).values()) / hops)
            check.duplicated += math.ceil(sum((served - wanted).values()) / hops)
    return check
