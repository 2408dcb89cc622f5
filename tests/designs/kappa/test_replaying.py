"""A replay reads the log in micro-batches of its own cap; live streaming keeps its cap."""

from __future__ import annotations

import pytest

from config.settings import load_settings
from designs.kappa.reprocess import replaying

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


def test_a_replay_splits_what_it_reads_into_equal_micro_batches():
    settings = load_settings(stream={"replay_max_offsets_per_trigger": 1_000_000})

    def cap(remaining: dict[int, int]) -> int:
        return replaying(settings, remaining).stream.max_offsets_per_trigger

    # 1,015,165 offsets: one micro-batch of them all, not 1M and a tail of 15,165
    assert cap({0: 507_583, 1: 507_582}) == 1_015_165 + 2
    # 5,075,825 offsets in 4 partitions: five equal micro-batches, not five and a tail of 75k
    assert cap({p: 1_268_956 for p in range(4)} | {3: 1_268_957}) == 1_015_165 + 4
    # 1.6M: two micro-batches of 800k (the cap is a size to aim at, not a hard limit)
    assert cap({0: 1_600_000}) == 800_000 + 1
    # a small replay in one micro-batch; nothing left to read keeps the cap
    assert cap({0: 10, 1: 0}) == 10 + 2
    assert cap({0: 0}) == 1_000_000
