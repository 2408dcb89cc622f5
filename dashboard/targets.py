"""What the page watches: one design per target, each with the settings that locate it."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from config.settings import Settings


@dataclass(frozen=True)
class Target:
    """One design to watch: a label for people and the settings of its log and lake."""

    label: str
    settings: Settings


def configured(settings: Settings) -> list[Target]:
    """The platform ``lk.yaml`` describes: its one design."""
    return [Target(settings.mode, settings)]


def compare_runs(work: Path) -> list[Target]:
    """The designs an ``lk compare`` run has started so far (``work/*/job.json``), in order.

    Each design of a comparison has a topic and a storage root of its own; its job file
    holds the settings it runs with, so the page finds each design as it starts.
    """
    found = []
    for job in sorted(work.glob("*/job.json"), key=lambda p: p.stat().st_mtime):
        try:
            data = json.loads(job.read_text())
        except ValueError:
            continue  # being written
        settings = Settings.model_validate(data["settings"])
        label = f"{settings.mode} (seed {data.get('seed')}, {job.parent.name})"
        found.append(Target(label, settings))
    return found
