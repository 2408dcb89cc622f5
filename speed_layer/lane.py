"""A lane: one streaming job's home (its checkpoint and its log).

The Lambda speed layer runs one lane; Kappa runs one lane per version of the views
(``v1``, ``v2``, ...). Everything a lane computes is in its log
(:mod:`speed_layer.lane_log`), one Delta table; Spark's checkpoint beside it holds the
offsets and the de-duplication state.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any

from pyspark.sql import SparkSession

from config.settings import ViewSettings
from lake import storage
from lake.tables import Tables


@dataclass(frozen=True)
class Lane:
    """Paths and identity of one streaming job, and the view settings it was created with.

    ``recoveries`` counts the micro-batches crash recovery has undone (see
    :mod:`speed_layer.recovery`).
    """

    name: str
    root: str
    views: dict[str, Any] = field(default_factory=dict)
    recoveries: int = 0

    @property
    def log(self) -> str:
        """Everything the lane computed: view state, late events, quarantine, progress."""
        return f"{self.root}/log"

    @property
    def checkpoint(self) -> str:
        """Spark's checkpoint (offsets, commits, dedup state)."""
        return f"{self.root}/checkpoint"


def lane_root(tables: Tables, name: str) -> str:
    """``lambda-speed`` -> ``root/lambda/speed``; ``kappa-v2`` -> ``root/kappa/v2``."""
    return tables.path(*name.split("-", 1))


def _lane(root: str, data: dict[str, Any]) -> Lane:
    return Lane(
        name=data["name"],
        root=root,
        views=data.get("views", {}),
        recoveries=data.get("recoveries", 0),
    )


def find_lane(spark: SparkSession, tables: Tables, name: str) -> Lane | None:
    """The lane's identity if it has been created (readers use this: it never writes)."""
    root = lane_root(tables, name)
    meta = f"{root}/_lane.json"
    if not storage.exists(spark, meta):
        return None
    return _lane(root, json.loads(storage.read_text(spark, meta)))


def open_lane(
    spark: SparkSession, tables: Tables, name: str, views: ViewSettings | None = None
) -> Lane:
    """Load a lane's identity, creating it the first time.

    ``views`` are frozen into a new lane: a Kappa version keeps computing with the view
    settings it was built with, whatever the config says later. Only a lane's writer
    opens it; readers use :func:`find_lane`.
    """
    found = find_lane(spark, tables, name)
    if found is not None:
        return found
    root = lane_root(tables, name)
    data = {"name": name, "views": views.model_dump(mode="json") if views else {}}
    storage.write_text(spark, f"{root}/_lane.json", json.dumps(data))
    return _lane(root, data)


def count_recovery(spark: SparkSession, lane: Lane) -> Lane:
    """Record that crash recovery undid one more of the lane's micro-batches."""
    meta = f"{lane.root}/_lane.json"
    data = json.loads(storage.read_text(spark, meta))
    data["recoveries"] = data.get("recoveries", 0) + 1
    storage.write_text(spark, meta, json.dumps(data))
    return replace(lane, recoveries=data["recoveries"])
