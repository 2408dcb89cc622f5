"""What every scenario shares: one SparkSession, a broker of the harness's own, a folder."""

from __future__ import annotations

import random
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse
from uuid import uuid4

from pyspark.sql import SparkSession

from config.errors import LkError
from config.settings import Settings, with_sections
from event_log.topics import ensure_topics
from lake.tables import Tables
from workload.generator import Record, WorkloadSpec, generate
from workload.producer import produce

#: Small micro-batches, so a short workload still spans several of them.
STREAM = {
    "max_offsets_per_trigger": 500,
    "replay_max_offsets_per_trigger": 1_000,
    "compact_every": 3,
}


class ProduceFailedError(LkError, RuntimeError):
    """The harness's own produce (not under a fault) lost records: the bench is broken."""


@dataclass
class Bench:
    """The session, the settings pointed at the harness's broker, and a scratch folder.

    Attributes:
        spark: the one SparkSession the harness reads and recovers with.
        settings: settings pointed at the broker the scenarios may kill.
        folder: child outputs and config files.
        events: events per workload (scenarios scale from it).
    """

    spark: SparkSession
    settings: Settings
    folder: Path
    events: int = 2_000

    def fresh(self, mode: str = "lambda", **sections: dict[str, Any]) -> Settings:
        """Settings with topics (created) and a storage root of their own."""
        suffix = uuid4().hex[:10]
        settings = with_sections(
            self.settings,
            kafka={"events_topic": f"events_{suffix}", "catalog_topic": f"catalog_{suffix}"},
            storage={"root": f"{self.settings.storage.root}/{suffix}"},
            stream=STREAM,
            watchdog={"home": self.folder / "pids" / suffix},
            **sections,
        ).model_copy(update={"mode": mode})
        ensure_topics(settings)
        return settings

    def workload(self, seed: int, events: int | None = None) -> list[Record]:
        """The seeded records of one run, in send order."""
        spec = WorkloadSpec(events=events or self.events, users=60, products=30, seed=seed)
        return list(generate(spec))

    def produce(self, settings: Settings, records: list[Record]) -> None:
        """Send records with no fault around: every one must be acknowledged."""
        report = produce(settings, records)
        if report.failed or report.acknowledged != report.sent:
            raise ProduceFailedError(report.describe_unsent())


def in_slices(records: list[Record], parts: int) -> list[list[Record]]:
    """The workload in ``parts`` slices of events, the whole catalog in the first.

    The speed layer joins each micro-batch with the catalog as it stands then
    (``docs/semantics.md``); with the catalog complete before any event, the oracle's
    one catalog is the one every micro-batch saw.
    """
    catalog = [r for r in records if r.topic == "catalog"]
    events = [r for r in records if r.topic != "catalog"]
    cuts = [len(events) * i // parts for i in range(parts + 1)]
    slices = [events[a:b] for a, b in pairwise(cuts)]
    slices[0] = catalog + slices[0]
    return slices


def lane_dir(settings: Settings, *parts: str) -> Path:
    """A folder of the storage root on the local disk (the harness watches Spark's files).

    The harness needs a local storage root: it watches checkpoints to time its kills.
    """
    uri = Tables.of(settings).path(*parts)
    return Path(unquote(urlparse(uri).path) if uri.startswith("file:") else uri)


def checkpoint_ids(checkpoint: Path, kind: str) -> set[int]:
    """Micro-batch ids in Spark's ``offsets`` (planned) or ``commits`` (done) folder."""
    folder = checkpoint / kind
    return {int(p.name) for p in folder.iterdir() if p.name.isdigit()} if folder.exists() else set()


def rng_for(seed: int, scenario: str) -> random.Random:
    """A random stream per scenario and seed: the same seed draws the same moments."""
    return random.Random(f"{scenario}:{seed}")
