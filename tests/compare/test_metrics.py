from __future__ import annotations

from datetime import datetime

import pytest

from compare.metrics import epoch, freshness, handoff, window_delays, windows_over_time

pytestmark = pytest.mark.unit


def test_handoff_counts_double_and_missed_probes() -> None:
    quantity = {1: 1, 2: 2, 4: 0}
    counted = handoff(quantity, probes=[1, 2, 3, 4, 5], excluded={5}, straddling={2, 3})
    assert counted["counted_once"] == 1
    assert counted["counted_twice_or_more"] == 1
    assert counted["missed"] == 2  # 3 and 4 (5 is excluded as late by the contract)
    assert counted["excluded_as_late"] == 1
    assert counted["probes_in_the_micro_batch_at_the_cutoff"] == 2
    assert (counted["double_at_cutoff"], counted["missed_at_cutoff"]) == (1, 1)


def test_window_first_and_correct_answers() -> None:
    w = datetime(2026, 11, 1, 0, 0)
    key = (w, "toys")
    start = epoch(w)
    polls = [
        (start + 70, {key: (1, "1.00")}),  # provisional
        (start + 80, {key: (2, "3.00")}),  # correct
        (start + 90, {key: (2, "3.00")}),
    ]
    found = windows_over_time(polls, {key: (2, "3.00")})["windows"]
    assert found[0]["first"] == start + 70 and found[0]["correct"] == start + 80
    delays = window_delays(found, size_s=60)
    assert delays["first_answer_after_window_end_s"]["p50"] == 10
    assert delays["correct_answer_after_window_end_s"]["p50"] == 20
    never = windows_over_time(polls[:1], {key: (2, "3.00")})["windows"]
    assert window_delays(never, 60)["never_correct_by_end"] == 1


def test_freshness_from_ack_due_and_event_time() -> None:
    probes = [
        {"id": "7", "due": 100.0, "sent": 100.1, "acked": 100.2, "event_time": 100.0},
        {"id": "8", "due": 101.0, "sent": 101.0, "acked": 101.1, "event_time": 41.0},
        {"id": "9", "due": 102.0, "sent": 102.0, "acked": 102.1, "event_time": 102.0},
        {"id": "6", "due": 50.0, "sent": 50.0, "acked": 50.1, "event_time": 50.0},  # warm-up
    ]
    fresh = freshness(probes, {7: 102.2, 8: 104.1}, excluded=set(), warmup_until=90.0)
    assert fresh["discarded_warm_up"] == 1
    assert fresh["never_seen_unexplained"] == 1
    assert fresh["processing_time_s"]["max"] == pytest.approx(3.0)
    assert fresh["event_time_s"]["max"] == pytest.approx(63.1)  # a probe 60 s late
