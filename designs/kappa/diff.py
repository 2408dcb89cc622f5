"""What a switch changes: per view, the rows of the old and the new version compared.

Saved next to the pointer before each switch (``kappa/diffs/v{old}_v{new}.json``), so
whoever switched can see what readers were given instead, and roll back.
"""

from __future__ import annotations

from functools import reduce

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from config.settings import Settings
from designs.kappa.versions import presented
from views.registry import ViewRegistry


def diff_versions(
    spark: SparkSession,
    settings: Settings,
    old: int,
    new: int,
    registry: ViewRegistry,
) -> dict[str, dict[str, int]]:
    """Per view: rows in each version, rows in only one, matched rows whose values differ.

    One Spark job for every view (a full outer join per view, their counts unioned), not
    five counts per view: the diff is on the path from a caught-up replay to the switch.
    """
    counts = [
        diff_counts(
            presented(spark, settings, old, view),
            presented(spark, settings, new, view),
            list(view.key),
        ).select(F.lit(view.name).alias("view"), "*")
        for view in registry
    ]
    rows = reduce(DataFrame.unionByName, counts).collect()
    return {r["view"]: {k: v for k, v in r.asDict().items() if k != "view"} for r in rows}


def diff_counts(old: DataFrame, new: DataFrame, keys: list[str]) -> DataFrame:
    """One row: ``rows_old``, ``rows_new``, ``only_old``, ``only_new`` and ``changed``.

    Rows are matched on ``keys`` (a view's key names one presented row; a null key
    matches nothing); ``changed`` counts matched rows that differ in a column both have.
    """
    values = [c for c in old.columns if c not in keys and c in new.columns]
    a = old.select(*keys, F.struct(*values).alias("_old"))
    b = new.select(*keys, F.struct(*values).alias("_new"))
    in_old, in_new = F.col("_old").isNotNull(), F.col("_new").isNotNull()
    same = reduce(
        lambda x, y: x & y,
        [F.col("_old")[c].eqNullSafe(F.col("_new")[c]) for c in values],
        F.lit(True),
    )
    return a.join(b, keys, "full_outer").agg(
        F.count(F.when(in_old, 1)).alias("rows_old"),
        F.count(F.when(in_new, 1)).alias("rows_new"),
        F.count(F.when(in_old & ~in_new, 1)).alias("only_old"),
        F.count(F.when(in_new & ~in_old, 1)).alias("only_new"),
        F.count(F.when(in_old & in_new & ~same, 1)).alias("changed"),
    )
