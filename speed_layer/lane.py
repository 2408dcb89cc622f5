"""A lane: one streaming job's home (checkpoint, state tables, progress log, app id).

The Lambda speed layer runs one lane; Kappa runs one lane per version of the views
(``v1``, ``v2``, ...). A lane's Delta writes are made idempotent with ``txnAppId`` =
the lane's app id, which is created together with its checkpoint: a new checkpoint
gets a new app id, or Delta would skip its writes as already done.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field, replace
from typing import Any

from pyspark.sql import SparkSession

from lk import storage
from lk.config import ViewSettings
from lk.tables import Tables


@dataclass(frozen=True)
class Lane:
    """Paths and identity of one streaming job, and the view settings it was created with."""

    name: str
    root: str
    app_id: str
    views: dict[str, Any] = field(default_factory=dict)
    generation: int = 0

    @property
    def txn_app_id(self) -> str:
        """The Delta ``txnAppId`` prefix of this lane's writes (new after each recovery)."""
        return f"{self.app_id}-g{self.generation}"

    def attempt(self, batch_id: int) -> str:
        """This generation's attempt at micro-batch ``batch_id`` (tags shared-table rows)."""
        return f"{self.txn_app_id}:{batch_id}"

    @property
    def late_events(self) -> str:
        """Events this lane excluded from a view as later than the view's watermark."""
        return f"{self.root}/late_events"

    @property
    def checkpoint(self) -> str:
        """Spark's checkpoint (offsets, commits, dedup state)."""
        return f"{self.root}/checkpoint"

    @property
    def progress(self) -> str:
        """One row per committed micro-batch: offsets, watermark, epoch, metrics."""
        return f"{self.root}/progress"

    @property
    def retained(self) -> str:
        """Recent valid events with the views they were late for (join context, rebase)."""
        return f"{self.root}/retained_events"

    def state(self, epoch: str, view: str) -> str:
        """Merged state of ``view`` in ``epoch`` (Lambda: batch run id; Kappa: ``kappa``)."""
        return f"{self.root}/epochs/{epoch}/{view}"

    def epoch_dir(self, epoch: str) -> str:
        """Everything of one epoch."""
        return f"{self.root}/epochs/{epoch}"


def lane_root(tables: Tables, name: str) -> str:
    """``lambda-speed`` -> ``root/lambda/speed``; ``kappa-v2`` -> ``root/kappa/v2``."""
    return tables.path(*name.split("-", 1))


def _lane(root: str, data: dict[str, Any]) -> Lane:
    return Lane(
        name=data["name"],
        root=root,
        app_id=data["app_id"],
        views=data.get("views", {}),
        generation=data.get("generation", 0),
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
    """Load a lane's identity, creating it (and a fresh app id) the first time.

    ``views`` are frozen into a new lane: a Kappa version keeps computing with the view
    settings it was built with, whatever the config says later. Only a lane's writer
    opens it; readers use :func:`find_lane`.
    """
    found = find_lane(spark, tables, name)
    if found is not None:
        return found
    root = lane_root(tables, name)
    data = {
        "name": name,
        "app_id": f"lk-{name}-{uuid.uuid4().hex[:12]}",
        "views": views.model_dump(mode="json") if views else {},
    }
    storage.write_text(spark, f"{root}/_lane.json", json.dumps(data))
    return _lane(root, data)


def bump_generation(spark: SparkSession, lane: Lane) -> Lane:
    """Move the lane to a new ``txnAppId`` generation (after undoing a partial batch)."""
    meta = f"{lane.root}/_lane.json"
    data = json.loads(storage.read_text(spark, meta))
    data["generation"] = data.get("generation", 0) + 1
    storage.write_text(spark, meta, json.dumps(data))
    return replace(lane, generation=data["generation"])
