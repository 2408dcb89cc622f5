"""Crash recovery: undo the partial writes of a micro-batch Spark never committed.

Spark plans micro-batch N (``offsets/N``), runs ``foreachBatch``, then writes
``commits/N``. Killed in between, a restart would re-run N from the offsets log; Spark
4.1.1's Kafka source then fails in ``metrics`` (its latest offsets were never fetched).
So the lane recovers the way a database undoes an uncommitted transaction instead:

1. at the start of each micro-batch the processor records the Delta version of the
   lane's log (``_batches/N.json``); everything N writes goes to that one table;
2. before a restart, if ``offsets/N`` has no ``commits/N``, the log is restored to its
   recorded version (deleted, if N created it) and ``offsets/N`` is removed, so Spark
   plans N again from the last committed offsets. When nothing was ever committed
   (killed inside a lane's first micro-batch), the state store's files of that batch
   go too, and so does the ``commits`` folder, which then holds nothing but the temp
   file of a commit the kill cut short: Spark refuses to start batch 0 on a non-empty
   ``state`` or ``commits`` folder (``STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY``),
   while a later batch simply overwrites its state version.

Nothing the crashed attempt wrote survives, and nothing is lost: batch N is re-read
from Kafka, the source of truth.
"""

from __future__ import annotations

import json
import logging
import re

from delta.tables import DeltaTable
from pyspark.sql import SparkSession

from lake import storage
from speed_layer.lane import Lane, count_recovery

log = logging.getLogger(__name__)
_ID = re.compile(r"^\d+$")


def _latest(spark: SparkSession, folder: str) -> int | None:
    fs_names = storage.list_files(spark, folder)
    ids = [int(n) for n in fs_names if _ID.match(n)]
    return max(ids) if ids else None


def marker(lane: Lane, batch_id: int) -> str:
    """Where the table versions before micro-batch ``batch_id`` are recorded."""
    return f"{lane.root}/_batches/{batch_id}.json"


def record_version(spark: SparkSession, lane: Lane, batch_id: int) -> int | None:
    """Record (and return) the log's Delta version before micro-batch ``batch_id`` writes."""
    version = storage.delta_version(spark, lane.log)
    storage.write_text(spark, marker(lane, batch_id), json.dumps({"log": version}))
    return version


def recover(spark: SparkSession, lane: Lane) -> Lane:
    """Undo an uncommitted micro-batch, if the last run died in one; return the lane to use.

    The recovery is counted in the lane's identity before the checkpoint forgets ``N``.
    """
    planned = _latest(spark, f"{lane.checkpoint}/offsets")
    committed = _latest(spark, f"{lane.checkpoint}/commits")
    if planned is None or (committed is not None and committed >= planned):
        return lane
    uri = marker(lane, planned)
    if storage.exists(spark, uri):
        version = json.loads(storage.read_text(spark, uri))["log"]
        current = storage.delta_version(spark, lane.log)
        if version is None:
            storage.delete(spark, lane.log)
        elif current is not None and current != version:
            DeltaTable.forPath(spark, lane.log).restoreToVersion(version)
    recovered = count_recovery(spark, lane)
    storage.delete_file(spark, uri)
    if committed is None:
        storage.delete(spark, f"{lane.checkpoint}/state")
        storage.delete(spark, f"{lane.checkpoint}/commits")
    storage.delete_file(spark, f"{lane.checkpoint}/offsets/{planned}")
    log.warning(
        "lane %s: undid uncommitted micro-batch %d; Spark plans it again", lane.name, planned
    )
    return recovered
