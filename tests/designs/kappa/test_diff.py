"""The diff a reprocess saves: rows matched on the view's key, counted in one pass."""

from __future__ import annotations

import pytest

from designs.kappa.diff import diff_counts

pytestmark = pytest.mark.integration
SCHEMA = "k string, w int, total double, note string"
OLD = [
    ("a", 1, 1.0, None),  # the same in new, a null value included
    ("b", 1, 2.0, "x"),  # total changes
    ("c", 1, 3.0, None),  # note changes from null to a value
    ("d", 1, 4.0, "gone"),  # only in old
    (None, 1, 5.0, None),  # a null key matches nothing
]
NEW = [
    ("a", 1, 1.0, None),
    ("b", 1, 2.5, "x"),
    ("c", 1, 3.0, "y"),
    ("a", 2, 9.0, None),  # only in new: the same k in another w
    (None, 1, 5.0, None),
]


def test_rows_are_in_both_only_old_only_new_or_changed(spark):
    old, new = spark.createDataFrame(OLD, SCHEMA), spark.createDataFrame(NEW, SCHEMA)

    counts = diff_counts(old, new, ["k", "w"]).first().asDict()

    assert counts == {"rows_old": 5, "rows_new": 5, "only_old": 2, "only_new": 2, "changed": 2}


def test_only_columns_both_versions_have_are_compared(spark):
    old = spark.createDataFrame(OLD, SCHEMA)
    new = spark.createDataFrame(NEW, SCHEMA).drop("note")

    counts = diff_counts(old, new, ["k", "w"]).first().asDict()

    assert counts["changed"] == 1, "b's total; c's note is not in the new version"
