"""Inserting only new rows: an append into an empty table, a MERGE after; counts either way."""

from __future__ import annotations

import pytest
from delta.tables import DeltaTable

from lake.insert import insert_new

pytestmark = pytest.mark.integration
MATCH = "t.id = n.id"


def test_rows_land_once_whether_appended_or_merged(spark, tmp_path):
    path = str(tmp_path / "t")
    first = spark.createDataFrame([(1, "a"), (2, "b")], "id INT, v STRING")
    DeltaTable.createIfNotExists(spark).location(path).addColumns(first.schema).execute()
    assert insert_new(spark, path, first, MATCH) == 2
    operations = [r.operation for r in DeltaTable.forPath(spark, path).history().collect()]
    assert operations[0] == "WRITE", "the empty table took a plain append"

    again = spark.createDataFrame([(2, "b"), (3, "c")], "id INT, v STRING")
    assert insert_new(spark, path, again, MATCH) == 1
    assert insert_new(spark, path, again, MATCH) == 0
    rows = spark.read.format("delta").load(path).orderBy("id").collect()
    assert [(r.id, r.v) for r in rows] == [(1, "a"), (2, "b"), (3, "c")]


def test_the_first_insert_creates_the_table(spark, tmp_path):
    path = str(tmp_path / "t")
    none = spark.createDataFrame([], "id INT, v STRING")
    assert insert_new(spark, path, none, MATCH) == 0
    assert spark.read.format("delta").load(path).columns == ["id", "v"]
    rows = spark.createDataFrame([(1, "a")], "id INT, v STRING")
    assert insert_new(spark, path, rows, MATCH) == 1
    assert insert_new(spark, path, rows, MATCH) == 0
    assert [(r.id, r.v) for r in spark.read.format("delta").load(path).collect()] == [(1, "a")]
