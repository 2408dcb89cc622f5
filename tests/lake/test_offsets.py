"""How far a reader got, per partition: one comparison for every "caught up" question."""

from __future__ import annotations

import pytest

from lake.offsets import dump_offsets, load_offsets, reaches

pytestmark = pytest.mark.unit


def test_a_reader_reaches_ends_only_when_at_or_past_every_partition_named():
    assert reaches({0: 5, 1: 7}, {0: 5, 1: 6})
    assert not reaches({0: 5, 1: 7}, {0: 6, 1: 7}), "one partition behind"
    assert not reaches({0: 5}, {0: 5, 1: 1}), "a partition not read at all"
    assert reaches({0: 5}, {0: 5, 1: 0}), "an empty partition needs no read"
    assert reaches({0: 5, 2: 9}, {0: 5}), "partitions the ends do not name do not count"
    assert reaches({}, {})


def test_offsets_go_to_json_and_back():
    assert dump_offsets({1: 7, 0: 12}) == '{"0": 12, "1": 7}'
    assert load_offsets(dump_offsets({1: 7, 0: 12})) == {0: 12, 1: 7}
    assert load_offsets(None) == {}
