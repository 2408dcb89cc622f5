"""Watching your own views while a design runs: when each probe's row became visible.

A probe (:mod:`compare.own_files`) has a marker (``lk-probe-N``) in a field a view is
keyed by, so it has a row of its own there. The watcher (:mod:`compare.watch`) asks the
design's read API for that view over HTTP; a probe is seen when an answer first holds a
row whose marker column carries it.
"""

from __future__ import annotations

import time

from compare.own_files import PROBE
from compare.watch import Client, Look, Seen


def probe_look(view: str, marker: str) -> Look:
    """The look for probes of your own data: rows of ``view`` whose ``marker`` is a probe's."""

    def look(client: Client, seen: Seen) -> None:
        rows = client.rows(view)
        now = time.time()
        for row in rows or ():
            value = row.get(marker)
            if isinstance(value, str) and value.startswith(PROBE):
                seen.probe_first_seen.setdefault(int(value.removeprefix(PROBE)), now)

    return look
