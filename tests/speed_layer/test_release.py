"""What a micro-batch cached is released newest first, so nothing is planned again."""

from __future__ import annotations

import pytest

from speed_layer.jobs import release

pytestmark = pytest.mark.unit


class Cached:
    """Stands in for a cached DataFrame: records when it is released."""

    def __init__(self, name: str, released: list[str]) -> None:
        self.name = name
        self.released = released

    def unpersist(self) -> None:
        self.released.append(self.name)


def test_the_partners_go_before_the_batch_they_were_computed_from():
    released: list[str] = []
    held = [Cached("batch", released), Cached("partners", released)]

    release(held)

    assert released == ["partners", "batch"]
    assert held == []
