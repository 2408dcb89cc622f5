"""The replay benchmark's ratios: fresh and first within their rounds, warm by its rounds."""

from __future__ import annotations

import pytest

from benchmarks.recompute_vs_replay import ratios

pytestmark = pytest.mark.unit

SECONDS = {
    "lambda_batch_from_log": 50.0,
    "lambda_batch_from_bronze": 20.0,
    "floor_revenue_only": 2.0,
    "ceiling_read_decode": 5.0,
    "kappa_replay_fresh": 40.0,
    "kappa_reprocess_fresh": 60.0,
    "floor_views_from_log_fresh": 30.0,
    "kappa_replay": 25.0,
    "floor_views_from_log": 20.0,
    "floor_views_from_log_warm": 15.0,
}
PAIRS = [
    {"order": "floor, replay", "floor_views_from_log": 15.0, "kappa_replay": 20.0},
    {"order": "replay, floor", "kappa_replay": 16.0, "floor_views_from_log": 16.0},
    {"order": "floor, replay", "floor_views_from_log": 14.0, "kappa_replay": 14.0 / 0.9},
]


def test_the_warm_ratio_is_the_median_of_each_pairs_own_ratio():
    result = ratios(SECONDS, PAIRS)

    # the pairs' ratios are 0.75, 1.0 and 0.9; the medians of their seconds would give 0.94
    assert result["replay_throughput_vs_views_floor_warm"] == 0.9
    assert result["replay_throughput_vs_views_floor_fresh"] == 0.75
    assert result["replay_throughput_vs_views_floor"] == 0.8


def test_the_replay_and_the_reprocess_are_held_against_the_batch_run_by_their_fresh_runs():
    result = ratios(SECONDS, PAIRS)

    assert result["kappa_replay_vs_batch_from_log"] == 0.8
    assert result["kappa_reprocess_vs_batch_from_log"] == 1.2


def test_without_a_replay_only_the_batch_and_floor_ratios_are_given():
    seconds = {k: v for k, v in SECONDS.items() if "kappa" not in k}

    assert ratios(seconds, []) == {
        "batch_from_bronze_vs_floor": 10.0,
        "views_floor_throughput_vs_read_decode_ceiling": 0.25,
    }


def test_the_replay_is_held_against_the_streaming_views_floor_in_each_way_it_ran():
    seconds = SECONDS | {"stream_floor_replay_fresh": 36.0, "stream_floor_replay": 20.0}
    rounds = [
        {"floor_views_from_log": 15.0, "stream_floor_replay": 18.0, "kappa_replay": 20.0},
        {"stream_floor_replay": 19.0, "kappa_replay": 19.0, "floor_views_from_log": 16.0},
        {"kappa_replay": 18.0, "floor_views_from_log": 14.0, "stream_floor_replay": 17.1},
    ]

    result = ratios(seconds, rounds)

    # the rounds' ratios to the streaming floor are 0.9, 1.0 and 0.95; to the batch floor
    # 0.75, 0.84 and 0.78
    assert result["replay_throughput_vs_stream_views_floor_warm"] == 0.95
    assert result["replay_throughput_vs_stream_views_floor_fresh"] == 0.9
    assert result["replay_throughput_vs_stream_views_floor"] == 0.8
    assert result["replay_throughput_vs_views_floor_warm"] == 0.78
