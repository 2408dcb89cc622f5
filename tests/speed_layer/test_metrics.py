"""A lane's metrics file: what the lane writes, every reader reads, with or without Spark."""

from __future__ import annotations

import json

import pytest

from speed_layer.lane import Lane
from speed_layer.metrics import (
    Tally,
    dedup_outcome,
    processed_offsets,
    read_metrics,
    watermark_drops,
    write_metrics,
)

METRICS = {
    "batch_id": 7,
    "end_offsets": {"events": {"0": 120, "1": 95}},
    "watermark_drops": 3,
}


@pytest.mark.unit
def test_a_local_lane_is_read_as_a_plain_file(tmp_path):
    assert read_metrics(None, str(tmp_path)) is None  # before the first micro-batch
    (tmp_path / "_metrics.json").write_text(json.dumps(METRICS))
    assert read_metrics(None, str(tmp_path)) == METRICS
    assert read_metrics(None, tmp_path.as_uri()) == METRICS


@pytest.mark.unit
def test_remote_storage_needs_a_session():
    with pytest.raises(ValueError, match="SparkSession"):
        read_metrics(None, "s3a://bucket/lk/lambda/speed")


@pytest.mark.unit
def test_processed_offsets_are_the_topic_s_by_partition_number():
    assert processed_offsets(METRICS, "events") == {0: 120, 1: 95}
    assert processed_offsets(METRICS, "other") is None
    assert processed_offsets({"batch_id": 0}, "events") is None
    assert processed_offsets(None, "events") is None


@pytest.mark.unit
def test_watermark_drops_count_zero_until_a_lane_reports_some():
    assert watermark_drops(METRICS) == 3
    assert watermark_drops({"batch_id": 1}) == 0
    assert watermark_drops(None) == 0


@pytest.mark.unit
def test_what_the_dedup_took_out_splits_into_resends_and_watermark_drops():
    assert dedup_outcome(40, None) == {"duplicates": 40, "watermark_drops": 0}
    assert dedup_outcome(40, {"watermark_drops": 15}) == {"duplicates": 25, "watermark_drops": 15}


@pytest.mark.integration
def test_what_the_lane_writes_through_spark_a_poller_reads_without(spark, tmp_path):
    lane = Lane(name="lambda-speed", root=tmp_path.as_uri())
    write_metrics(spark, lane, METRICS)
    write_metrics(spark, lane, {**METRICS, "batch_id": 8})

    assert read_metrics(None, str(tmp_path)) == {**METRICS, "batch_id": 8}
    assert read_metrics(spark, lane.root) == {**METRICS, "batch_id": 8}


@pytest.mark.unit
def test_a_new_tally_keeps_the_size_the_last_run_measured_until_it_measures_one(spark, tmp_path):
    lane = Lane(name="lambda-speed", root=tmp_path.as_uri())
    size = {"files": 3, "bytes": 900, "at": "2026-11-28T09:00:00Z"}
    write_metrics(spark, lane, {**METRICS, "log_size": size})

    assert Tally(spark, lane, None).log_size == size


class Reports:
    """What a streaming query reports after its micro-batches, as Spark gives it."""

    def __init__(self) -> None:
        self.recentProgress: list[dict] = []

    @property
    def lastProgress(self) -> dict | None:
        return self.recentProgress[-1] if self.recentProgress else None


@pytest.mark.unit
def test_a_tally_takes_in_each_reported_micro_batch_once_and_says_whether_any_came(spark, tmp_path):
    lane = Lane(name="lambda-speed", root=tmp_path.as_uri())
    tally = Tally(spark, lane, None)
    query = Reports()

    assert tally.record(query, {}) is False, "nothing reported yet"
    query.recentProgress.append({"batchId": 0, "numInputRows": 5})
    assert tally.record(query, {}) is True
    assert tally.record(query, {}) is False, "nothing new since"
    query.recentProgress += [{"batchId": 1, "numInputRows": 2}, {"batchId": 2, "numInputRows": 3}]
    assert tally.record(query, {0: {"count": 9}, 2: {"count": 7}}) is True

    assert (tally.batches, tally.rows) == (3, 10)
    assert [phases.get("count") for phases in tally.recent_phases] == [None, None, 7]
    assert read_metrics(None, str(tmp_path))["batch_id"] == 2
