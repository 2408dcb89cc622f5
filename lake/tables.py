"""Where every Delta table and checkpoint lives, under the configured storage root.

One place names the layout, so a root of ``/data``, ``file:/…`` or ``s3a://bucket/lk``
works without code changes.
"""

from __future__ import annotations

from dataclasses import dataclass

from config.settings import Settings
from lake.source import StateTable


@dataclass(frozen=True)
class Tables:
    """Table and checkpoint URIs for one storage root."""

    root: str

    @classmethod
    def of(cls, settings: Settings) -> Tables:
        """The layout for ``settings.storage``."""
        return cls(settings.storage.uri())

    def path(self, *parts: str) -> str:
        """``root/part/part``."""
        return "/".join([self.root, *parts])

    @property
    def bronze(self) -> str:
        """Raw events up to the latest batch cutoff, de-duplicated by ``event_id``."""
        return self.path("lambda", "bronze", "events")

    @property
    def quarantine(self) -> str:
        """Malformed records from every layer: raw bytes, offset, reason."""
        return self.path("quarantine")

    @property
    def batch_runs(self) -> str:
        """The batch runs log; its latest published row is the serving pointer."""
        return self.path("lambda", "batch_runs")

    def batch_views(self, run_id: str) -> str:
        """Every view's state as computed by one batch run: one table, one commit."""
        return self.path("lambda", "batch", run_id, "views")

    def batch_view(self, run_id: str, view: str) -> StateTable:
        """One view's state as computed by one batch run: its part of the run's table."""
        return StateTable(self.batch_views(run_id), part=view, column=view, appends=False)

    def batch_run_dir(self, run_id: str) -> str:
        """Everything one batch run wrote."""
        return self.path("lambda", "batch", run_id)
