"""The refresher resolves the serving source again only when a table that can move it moved."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from config.settings import Settings
from lake.source import ServingSource
from serving_layer.refresh import Refresher
from views.registry import ViewRegistry

pytestmark = pytest.mark.unit


def _commit(table: Path, version: int) -> None:
    """What a Delta commit leaves for a version probe: the next commit file in ``_delta_log``."""
    log = table / "_delta_log"
    log.mkdir(parents=True, exist_ok=True)
    (log / f"{version:020d}.json").write_text("{}\n")


def test_a_commit_resolves_the_source_only_where_the_source_says_it_can_move_it(tmp_path):
    runs, lane = str(tmp_path / "runs"), str(tmp_path / "lane")
    _commit(Path(runs), 0)
    _commit(Path(lane), 0)
    says = {"watched": (runs, lane)}  # what the next resolve will say can move the source
    resolved: list[tuple[str, ...]] = []

    def resolve(_spark) -> ServingSource:
        resolved.append(says["watched"])
        return ServingSource(f"source {len(resolved)}", {}, watched=says["watched"])

    refresher = Refresher(
        Settings(),
        ViewRegistry([]),
        resolve,
        pointers=(runs, lane),
        spark=SimpleNamespace(),  # local tables are probed by listing; Spark is never asked
        interval=3600,
    )
    refresher.refresh()
    refresher.refresh()
    assert len(resolved) == 1, "nothing moved: no second resolve"

    says["watched"] = (runs,)  # the lane settles on the newest run in the next resolve
    _commit(Path(lane), 1)
    refresher.refresh()
    assert len(resolved) == 2, "the lane moved while the source said it could move it"

    for version in (2, 3):
        _commit(Path(lane), version)
        refresher.refresh()
    assert len(resolved) == 2, "a settled source: the lane's commits cost no resolve"

    _commit(Path(runs), 1)
    refresher.refresh()
    assert len(resolved) == 3
    assert refresher.state.source == "source 3"


def test_without_pointer_tables_every_check_resolves(tmp_path):
    calls: list[int] = []

    def resolve(_spark) -> ServingSource:
        calls.append(1)
        return ServingSource("any", {})

    refresher = Refresher(
        Settings(), ViewRegistry([]), resolve, spark=SimpleNamespace(), interval=3600
    )
    for _ in range(3):
        refresher.refresh()
    assert len(calls) == 3
