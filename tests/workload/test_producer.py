"""How ``produce`` settles futures and picks partitions (no broker needed)."""

from __future__ import annotations

from collections import deque

import pytest
from kafka.errors import KafkaTimeoutError
from kafka.future import Future
from kafka.partitioner.default import DefaultPartitioner

from workload.producer import ProduceReport, _settle, partition_for

pytestmark = pytest.mark.unit


def test_settle_counts_finished_futures_in_order_and_keeps_the_rest() -> None:
    done, waiting, later = Future().success(1), Future(), Future().success(2)
    failed = Future().failure(KafkaTimeoutError("slow"))
    pending = deque(enumerate([done, failed, waiting, later]))
    report = ProduceReport()
    _settle(pending, report)
    assert (report.acknowledged, report.failed) == (1, 1)
    assert report.errors == [f"position 1: {failed.exception!r}"]
    assert report.unsent == [1]
    assert report.describe_unsent() == "not acknowledged: positions 1"
    assert list(pending) == [(2, waiting), (3, later)]
    waiting.success(3)
    _settle(pending, report)
    assert (report.acknowledged, report.failed, len(pending)) == (3, 1, 0)


class _Cluster:
    def __init__(self, partitions: int) -> None:
        self.partitions = set(range(partitions))

    def topics(self) -> set[str]:
        return {"t"}

    def partitions_for_topic(self, topic: str) -> set[int]:
        return self.partitions

    def available_partitions_for_topic(self, topic: str) -> set[int]:
        return self.partitions


@pytest.mark.parametrize("partitions", [1, 4, 7])
def test_partition_for_agrees_with_the_default_partitioner(partitions: int) -> None:
    cluster = _Cluster(partitions)
    for key in [str(i).encode() for i in range(300)]:
        expected = DefaultPartitioner().partition("t", key, key, None, None, cluster)
        assert partition_for(key, partitions) == expected
