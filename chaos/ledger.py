"""Count every record back from the log: acknowledged ones missing (lost), extra copies.

The expectation is the seeded workload itself, regenerated here, less the positions
the producer reported unsent; the log is read with the oracle's plain consumer.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from config.settings import Settings
from oracle import consume_all
from workload.generator import Record


@dataclass(frozen=True)
class Ledger:
    """Records sent, acknowledged, found in the log; what is missing or doubled."""

    sent: int
    acknowledged: int
    logged: int
    lost: int
    duplicated: int
    unexplained: int
    unsent_found: int


def count_back(
    settings: Settings,
    records: Sequence[Record],
    unsent: Iterable[int] = (),
    stopped_at: int | None = None,
) -> Ledger:
    """Compare the topics' contents with the records handed to the producer.

    Args:
        settings: where the topics are.
        records: every record of the workload, in send order.
        unsent: positions the producer reported as not acknowledged.
        stopped_at: the position from which the producer never sent anything.
    """
    topics = {"events": settings.kafka.events_topic, "catalog": settings.kafka.catalog_topic}
    end = len(records) if stopped_at is None else stopped_at
    failed = {p for p in unsent if p < end}

    def key(r: Record) -> tuple:
        return (topics[r.topic], r.key, r.value)

    sent = Counter(key(r) for r in records[:end])
    acked = Counter(key(r) for i, r in enumerate(records[:end]) if i not in failed)
    logged: Counter[tuple] = Counter()
    for name in topics.values():
        logged.update((name, r.key, r.value) for r in consume_all(settings, name))
    lost = sum(max(0, n - logged[k]) for k, n in acked.items())
    duplicated = sum(max(0, logged[k] - n) for k, n in sent.items())
    unexplained = sum(n for k, n in logged.items() if k not in sent)
    unsent_found = sum(min(logged[k], n) - acked[k] for k, n in sent.items() if n > acked[k])
    return Ledger(
        sent=end,
        acknowledged=end - len(failed),
        logged=sum(logged.values()),
        lost=lost,
        duplicated=duplicated,
        unexplained=unexplained,
        unsent_found=max(0, unsent_found),
    )
