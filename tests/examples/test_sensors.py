"""The sensors example (your own events and views) through Lambda and Kappa, real broker.

The file is replayed with ``lk replay``'s code; every served view must equal a pandas
computation over the same file (duplicates, out-of-order rows and broken rows included),
and every broken row must end in the quarantine, with its line reported by the replay.
"""

from __future__ import annotations

import pytest
from pyspark.sql import functions as F
from pyspark.testing import assertDataFrameEqual

from batch_layer.job import run_batch
from config.settings import Settings, load_settings
from designs.kappa import reprocess as kappa
from designs.kappa.versions import lane_name
from designs.lambda_arch import LAMBDA_LANE, run_speed
from designs.platform import build
from event_log.configured import load_contract
from lake.tables import Tables
from speed_layer import lane_log
from speed_layer.lane import find_lane
from tests.conftest import REPO, fresh_topics
from tests.examples.sensors_expected import EXPECTED, bad_lines
from workload.producer import produce
from workload.replay import ReplayStats, replay_records

pytestmark = pytest.mark.integration
EXAMPLE = REPO / "examples" / "sensors"
FILE = EXAMPLE / "readings.csv"
BAD_REASONS = {
    "invalid_measured_at": 2,
    "missing_field:reading_id": 1,
    "missing_field:sensor_id": 1,
    "invalid_temperature_c": 1,
    "temperature_out_of_range": 1,
    "invalid_humidity_pct": 1,
    "invalid_json": 1,
}


def example_settings(kafka_settings: Settings, mode: str) -> Settings:
    """The example's ``events`` and ``views`` sections on this test's own topics."""
    example = load_settings(EXAMPLE / "lk.yaml")
    events = example.events.model_copy(update={"schema_file": EXAMPLE / "schema.json"})
    views = example.views.model_copy(update={"module": str(EXAMPLE / "views.py")})
    settings = fresh_topics(kafka_settings, events_partitions=2)
    stream = settings.stream.model_copy(update={"max_offsets_per_trigger": 1_000})
    return settings.model_copy(
        update={"events": events, "views": views, "mode": mode, "stream": stream}
    )


def replay(settings: Settings, *, keep_file_order: bool, part: slice = slice(None)) -> ReplayStats:
    stats = ReplayStats()
    records = list(
        replay_records(FILE, load_contract(settings.events), stats, keep_file_order=keep_file_order)
    )
    report = produce(settings, records[part])
    assert report.failed == 0 and report.acknowledged == report.sent, report.as_dict()
    return stats


def assert_views_equal_pandas(spark, settings: Settings) -> None:
    platform = build(settings)
    assert platform.registry.names() == ["site_temperature", "sensor_activity"]
    for name, expected in EXPECTED.items():
        actual = platform.read(spark, name)
        rows = expected(FILE)
        assert rows, name
        expected_df = spark.createDataFrame(
            [tuple(r[c] for c in actual.columns) for r in rows], actual.schema
        )
        assertDataFrameEqual(actual, expected_df, atol=0.0011)  # Spark rounds half up


def quarantined_reasons(frames) -> dict[str, int]:
    rows = {}
    for frame in frames:
        if frame is not None:
            for r in frame.select("partition", "offset", "reason").collect():
                rows[(r.partition, r.offset)] = r.reason
    counts: dict[str, int] = {}
    for reason in rows.values():
        counts[reason] = counts.get(reason, 0) + 1
    return counts


def test_replay_reports_each_row_that_does_not_fit_by_line():
    settings = load_settings(EXAMPLE / "lk.yaml")
    events = settings.events.model_copy(update={"schema_file": EXAMPLE / "schema.json"})
    stats = ReplayStats()
    records = list(replay_records(FILE, load_contract(events), stats, run_rows=300))
    assert stats.rows == len(records) == sum(1 for _ in FILE.open()) - 1
    reported = [line for line, _ in stats.misfit_lines]
    # every bad line but the out-of-range temperature (a SQL rule: the decoder's to check)
    assert reported == [n for n in bad_lines(FILE) if n != 1462]


def test_lambda_batch_then_speed_serves_what_pandas_computes(spark, kafka_settings):
    settings = example_settings(kafka_settings, "lambda")
    stats = ReplayStats()
    records = list(replay_records(FILE, load_contract(settings.events), stats))
    split = int(len(records) * 0.6)
    assert produce(settings, records[:split]).failed == 0
    batch = run_batch(spark, settings, build(settings).registry)
    assert produce(settings, records[split:]).failed == 0
    run_speed(spark, settings, build(settings).registry, until_caught_up=True)

    assert (
        build(settings)
        .serving_source(spark)
        .description.startswith(f"batch run {batch.run.run_id} + speed")
    )
    assert_views_equal_pandas(spark, settings)
    tables = Tables.of(settings)
    batch_bad = spark.read.format("delta").load(tables.quarantine).where(F.col("layer") == "batch")
    lane = find_lane(spark, tables, LAMBDA_LANE)
    speed_bad = lane_log.read(spark, lane, lane_log.QUARANTINE)
    assert quarantined_reasons([batch_bad, speed_bad]) == BAD_REASONS


def test_kappa_replay_in_file_order_serves_what_pandas_computes(spark, kafka_settings):
    settings = example_settings(kafka_settings, "kappa")
    stats = replay(settings, keep_file_order=True)
    assert stats.out_of_order > 0, "the log holds out-of-order readings"
    result = kappa.reprocess(spark, settings, build(settings).registry)
    assert result.version == 1
    assert_views_equal_pandas(spark, settings)
    lane = find_lane(spark, Tables.of(settings), lane_name(1))
    assert quarantined_reasons([lane_log.read(spark, lane, lane_log.QUARANTINE)]) == BAD_REASONS
