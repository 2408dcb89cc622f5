"""A small event contract of your own (sites and readings), for tests of the own-data paths."""

from __future__ import annotations

from event_log.contract import EventContract, Field

READINGS = EventContract(
    fields=(
        Field("id", "STRING", True),
        Field("site", "STRING", True),
        Field("at", "TIMESTAMP", True),
        Field("n", "DOUBLE"),
    ),
    id_field="id",
    time_field="at",
    key_field="site",
    time_format="yyyy-MM-dd HH:mm:ss",
)
