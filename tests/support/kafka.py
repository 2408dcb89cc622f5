"""Produce generated workloads for tests (the oracle reads them back: ``oracle.consume_all``)."""

from __future__ import annotations

from config.settings import Settings
from workload.generator import WorkloadSpec, generate
from workload.producer import ProduceReport, produce


def produce_spec(
    settings: Settings, spec: WorkloadSpec, *, part: slice | None = None
) -> ProduceReport:
    """Produce a generated workload (or a slice of its records) and require every ack."""
    records = list(generate(spec))
    report = produce(settings, records[part] if part else records)
    assert report.failed == 0 and report.acknowledged == report.sent, report.as_dict()
    return report
