"""A lane: one streaming job's home (checkpoint, state tables, progress log, app id).

The Lambda speed layer runs one lane; Kappa runs one lane per version of the views
(``v1``, ``v2``, ...). A lane's Delta writes are made idempotent with ``txnAppId`` =
the lane's app id, which is created together with its checkpoint: a new checkpoint
gets a new app id, or Delta would skip its writes as already done.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass

from pyspark.sql import SparkSession

from lk import storage
from lk.tables import Tables


@dataclass(frozen=True)
class Lane:
    """Paths and identity of one streaming job."""

    name: str
    root: str
    app_id: str

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


def open_lane(spark: SparkSession, tables: Tables, name: str) -> Lane:
    """Load a lane's identity, creating it (and a fresh app id) the first time."""
    root = lane_root(tables, name)
    meta = f"{root}/_lane.json"
    if storage.exists(spark, meta):
        app_id = json.loads(storage.read_text(spark, meta))["app_id"]
    else:
        app_id = f"lk-{name}-{uuid.uuid4().hex[:12]}"
        storage.write_text(spark, meta, json.dumps({"name": name, "app_id": app_id}))
    return Lane(name=name, root=root, app_id=app_id)


def reset_lane(spark: SparkSession, tables: Tables, name: str) -> None:
    """Delete a lane entirely (checkpoint, state, progress)."""
    storage.delete(spark, lane_root(tables, name))
