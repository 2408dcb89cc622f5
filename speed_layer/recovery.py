"""Crash recovery: undo the partial writes of a micro-batch Spark never committed.

Spark plans micro-batch N (``offsets/N``), runs ``foreachBatch``, then writes
``commits/N``. Killed in between, a restart would re-run N from the offsets log; Spark
4.1.1's Kafka source then fails in ``metrics`` (its latest offsets were never fetched).
So the lane recovers the way a database undoes an uncommitted transaction instead:

1. at the start of each micro-batch the processor records the Delta version of every
   table of the lane (``_batches/N.json``);
2. before a restart, if ``offsets/N`` has no ``commits/N``, every table is restored to
   its recorded version (tables created by N are deleted, and N's rows are deleted from
   the shared quarantine), the lane moves to a new ``txnAppId`` generation (a restore
   does not rewind Delta's transaction ids), and ``offsets/N`` is removed, so Spark
   plans N again from the last committed offsets. When nothing was ever committed
   (killed inside a lane's first micro-batch), the state store's files of that batch
   go too: Spark refuses to start batch 0 on a non-empty ``state`` folder
   (``STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY``), while a later batch simply
   overwrites its state version.

Nothing the crashed attempt wrote survives, and nothing is lost: batch N is re-read
from Kafka, the source of truth.
"""

from __future__ import annotations

import json
import logging
import re

from delta.tables import DeltaTable
from pyspark.sql import SparkSession

from lake import quarantine
from lk import storage
from lk.tables import Tables
from speed_layer.lane import Lane, bump_generation

log = logging.getLogger(__name__)
_ID = re.compile(r"^\d+$")


def _latest(spark: SparkSession, folder: str) -> int | None:
    fs_names = storage.list_files(spark, folder)
    ids = [int(n) for n in fs_names if _ID.match(n)]
    return max(ids) if ids else None


def marker(lane: Lane, batch_id: int) -> str:
    """Where the table versions before micro-batch ``batch_id`` are recorded."""
    return f"{lane.root}/_batches/{batch_id}.json"


def record_versions(
    spark: SparkSession, lane: Lane, batch_id: int, tables: list[str]
) -> dict[str, int | None]:
    """Record (and return) the Delta version of each table before ``batch_id`` writes."""
    versions = {uri: storage.delta_version(spark, uri) for uri in tables}
    storage.write_text(spark, marker(lane, batch_id), json.dumps(versions))
    return versions


def recover(spark: SparkSession, lane: Lane, tables: Tables) -> Lane:
    """Undo an uncommitted micro-batch, if the last run died in one; return the lane to use.

    The shared quarantine (of ``tables``) is not the lane's to restore, so only the rows
    the undone attempt appended to it (tagged ``lane.attempt(N)``) go.
    The new generation is recorded before the checkpoint forgets ``N``: a crash in
    between re-runs this recovery instead of replaying ``N`` under the old transaction
    ids, which Delta would skip as already written.
    """
    planned = _latest(spark, f"{lane.checkpoint}/offsets")
    committed = _latest(spark, f"{lane.checkpoint}/commits")
    if planned is None or (committed is not None and committed >= planned):
        return lane
    uri = marker(lane, planned)
    if storage.exists(spark, uri):
        for table, version in json.loads(storage.read_text(spark, uri)).items():
            current = storage.delta_version(spark, table)
            if current is None or current == version:
                continue
            if version is None:
                storage.delete(spark, table)
            else:
                DeltaTable.forPath(spark, table).restoreToVersion(version)
        quarantine.forget_quarantined(spark, tables, lane.name, lane.attempt(planned))
    recovered = bump_generation(spark, lane)
    storage.delete_file(spark, uri)
    if committed is None:
        storage.delete(spark, f"{lane.checkpoint}/state")
    storage.delete_file(spark, f"{lane.checkpoint}/offsets/{planned}")
    log.warning(
        "lane %s: undid uncommitted micro-batch %d; Spark plans it again", lane.name, planned
    )
    return recovered
