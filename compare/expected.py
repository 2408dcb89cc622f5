"""What the oracle says a design must serve: all of the log, less what the contract drops.

The contract's late decisions come from the raw log and the lane's recorded micro-batch
boundaries (:func:`oracle.late_events`), never from the platform's own late-event list;
what a reader must then be served is :func:`oracle.served.served_views`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta

import oracle
from config.settings import ViewSettings


@dataclass(frozen=True)
class OracleLog:
    """The log as the oracle reads it: unique valid events and the catalog state."""

    events: Sequence[oracle.RawRecord]
    unique: list[oracle.Event]
    catalog: dict[int, str]
    quarantined: int
    history: oracle.CatalogHistory | None = None

    @classmethod
    def of(
        cls, events: Sequence[oracle.RawRecord], catalog: Sequence[oracle.RawRecord]
    ) -> OracleLog:
        """Decode, de-duplicate, fold the catalog (and keep its versions, for joins in time)."""
        decoded, bad = oracle.decode(events)
        return cls(
            events,
            oracle.dedup(decoded),
            oracle.catalog_state(catalog),
            len(bad),
            oracle.catalog_history(catalog),
        )


def late_by_contract(
    log: OracleLog,
    batches: Sequence[oracle.MicroBatch],
    lateness: Callable[[str], timedelta],
) -> dict[str, set[str]]:
    """``view -> event ids`` a lane with these micro-batches leaves out as late."""
    return oracle.late_events(log.unique, batches, oracle.VIEW_NAMES, lateness)


def full_views(log: OracleLog, settings: ViewSettings) -> dict[str, list[dict]]:
    """Every view over every unique valid event (nothing late, nothing left out)."""
    return oracle.compute_views(log.unique, log.catalog, settings, log.history)
