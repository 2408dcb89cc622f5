"""Crash recovery of an uncommitted micro-batch, on a lane set up by hand."""

from __future__ import annotations

import json

import pytest
from pyspark.sql import Row
from pyspark.testing import assertDataFrameEqual

from lake import quarantine
from lk import storage
from lk.tables import Tables
from speed_layer.lane import open_lane
from speed_layer.recovery import marker, recover

pytestmark = pytest.mark.integration


def _quarantine_row(layer: str, run_id: str, offset: int) -> tuple:
    return (layer, 0, offset, None, None, b"{", "invalid_json", run_id)


def test_recovery_undoes_only_the_crashed_attempts_quarantine_rows(spark, base_settings, tmp_path):
    settings = base_settings.model_copy(
        update={"storage": base_settings.storage.model_copy(update={"root": str(tmp_path)})}
    )
    tables = Tables.of(settings)
    lane = open_lane(spark, tables, "lambda-speed")
    storage.write_text(spark, f"{lane.checkpoint}/offsets/3", "v1")  # planned, never committed
    storage.write_text(spark, f"{lane.checkpoint}/commits/2", "v1")
    storage.write_text(spark, marker(lane, 3), json.dumps({}))
    quarantine.ensure_table(spark, tables)
    rows = [
        _quarantine_row(lane.name, lane.attempt(2), 10),  # committed micro-batch: kept
        _quarantine_row(lane.name, lane.attempt(3), 20),  # the crashed attempt: undone
        _quarantine_row("kappa-v1", lane.attempt(3), 20),  # another layer: kept
    ]
    spark.createDataFrame(rows, quarantine.QUARANTINE_SCHEMA).write.format("delta").mode(
        "append"
    ).save(tables.quarantine)

    recovered = recover(spark, lane, tables)

    assert recovered.generation == lane.generation + 1
    assert open_lane(spark, tables, "lambda-speed").generation == recovered.generation
    assert not storage.exists(spark, f"{lane.checkpoint}/offsets/3")
    assert not storage.exists(spark, marker(lane, 3))
    left = spark.read.format("delta").load(tables.quarantine).select("layer", "run_id")
    assertDataFrameEqual(
        left,
        [
            Row(layer=lane.name, run_id=lane.attempt(2)),
            Row(layer="kappa-v1", run_id=lane.attempt(3)),
        ],
    )
    assert recover(spark, recovered, tables) == recovered, "nothing left to undo"
