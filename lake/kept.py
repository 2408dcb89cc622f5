"""Rows computed once and kept in the session, planned as the rows they hold.

For a frame several plans read at once (a serving state merged onto, a micro-batch every
view reads): a cached frame is served from its cache only where a plan matches it, and
a union of several readers of one streaming micro-batch matched it in one branch only
(``compare.floor``), so every other branch computed the micro-batch again.
"""

from __future__ import annotations

from pyspark.sql import DataFrame


def kept(frame: DataFrame) -> DataFrame:
    """``frame`` computed now and kept in the session, planned as the rows it holds.

    A local checkpoint: the rows stay in the session's block store (memory, then local
    disk), and the frame's plan is one node over them, whatever it was computed from. So a
    state merged onto the state kept before it does not plan over that one (cached
    results planned one over the other kept the serving JVM in full garbage collections
    within an hour), and none of the files it was read from is read again.
    """
    return frame.localCheckpoint(eager=True)


def released(frame: DataFrame) -> None:
    """Free the rows :func:`kept` holds for ``frame``."""
    frame._jdf.logicalPlan().rdd().unpersist(False)
