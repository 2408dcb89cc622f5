"""A replay reads the log in micro-batches of its own cap; live streaming keeps its cap."""

from __future__ import annotations

import pytest

from kappa.reprocess import replaying
from lk.config import load_settings

pytestmark = pytest.mark.unit


def test_a_replay_uses_the_replay_cap_and_leaves_the_rest_alone():
    settings = load_settings(
        stream={"max_offsets_per_trigger": 5_000, "replay_max_offsets_per_trigger": 70_000}
    )
    replay = replaying(settings)
    assert replay.stream.max_offsets_per_trigger == 70_000
    assert replay.stream.replay_max_offsets_per_trigger == 70_000
    assert settings.stream.max_offsets_per_trigger == 5_000, "the live settings are unchanged"
    assert replay.views == settings.views and replay.kafka == settings.kafka
