"""Per-partition Kafka offsets: the cutoff filter, how far a reader got, their JSON form."""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import reduce

from pyspark.sql import Column
from pyspark.sql import functions as F

Offsets = Mapping[int, int]


def below(cutoff: Offsets, prefix: str = "") -> Column:
    """Rows whose (partition, offset) lies below the per-partition ``cutoff``.

    ``prefix``: where the two fields are, if not top-level (``retained.`` in a lane's log).
    """
    if not cutoff:
        return F.lit(False)
    partition, offset = F.col(f"{prefix}partition"), F.col(f"{prefix}offset")
    terms = [(partition == p) & (offset < o) for p, o in cutoff.items()]
    return reduce(lambda a, b: a | b, terms)


def reaches(read: Offsets, ends: Offsets) -> bool:
    """Whether ``read`` is at or past ``ends`` in every partition ``ends`` names."""
    return all(read.get(partition, 0) >= end for partition, end in ends.items())


def dump_offsets(offsets: Offsets) -> str:
    """``{0: 12, 1: 7}`` -> ``'{"0": 12, "1": 7}'`` (partitions in order)."""
    return json.dumps({str(p): int(o) for p, o in sorted(offsets.items())})


def load_offsets(text: str | None) -> dict[int, int]:
    """The inverse of :func:`dump_offsets` (empty for no text)."""
    return {int(p): int(o) for p, o in json.loads(text or "{}").items()}
