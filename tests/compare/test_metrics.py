from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from compare.metrics import (
    alert_figures,
    epoch,
    freshness,
    handoff,
    window_delays,
    windows_over_time,
)
from oracle.records import Event
from serving_layer.alerts import Alert, AlertRecord

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


def test_freshness_halves_split_the_probes_at_the_moment_given() -> None:
    probes = [
        {"id": "1", "due": 100.0, "sent": 100.0, "acked": 100.0, "event_time": 100.0},
        {"id": "2", "due": 101.0, "sent": 101.0, "acked": 101.0, "event_time": 101.0},
        {"id": "3", "due": 110.0, "sent": 110.0, "acked": 110.0, "event_time": 110.0},
        {"id": "4", "due": 111.0, "sent": 111.0, "acked": 111.0, "event_time": 111.0},
    ]
    seen = {1: 102.0, 2: 104.0, 3: 130.0, 4: 121.0}
    fresh = freshness(probes, seen, excluded=set(), warmup_until=0.0, halves_at=110.0)
    halves = fresh["halves"]
    assert (halves["before"]["n"], halves["before"]["max"]) == (2, pytest.approx(3.0))
    assert (halves["from"]["n"], halves["from"]["max"]) == (2, pytest.approx(20.0))
    assert "halves" not in freshness(probes, seen, excluded=set(), warmup_until=0.0)


def _purchase(user: int, minute: int, appended_s: float) -> Event:
    at = datetime(2026, 11, 1, 10, minute)
    return Event(f"p{user}-{minute}", "purchase", user, 1, 1, None, at, 0, 0, None,
                 datetime(2026, 11, 1, 10, 0) + timedelta(seconds=appended_s))  # fmt: skip


def test_alert_delay_runs_from_the_last_appended_purchase_of_the_interval() -> None:
    base = epoch(datetime(2026, 11, 1, 10, 0))
    events = [
        _purchase(1, 0, 100.0),
        _purchase(1, 2, 130.0),
        _purchase(1, 4, 250.0),  # the last appended of 1's burst
        _purchase(1, 20, 2_000.0),  # another interval
        _purchase(2, 10, 50.0),  # history: before the live phase
    ]
    records = [
        AlertRecord(Alert(1, "2026-11-01T10:04:00.000Z", 3), int((base + 252.5) * 1000), 0),
        AlertRecord(Alert(2, "2026-11-01T10:10:00.000Z", 4), int((base + 300.0) * 1000), 1),
        AlertRecord(Alert(2, "2026-11-01T10:10:00.000Z", 4, "retracted"), 0, 2),
    ]
    figures = alert_figures(records, events, timedelta(minutes=5), since=base + 200)
    assert figures["published"] == 2
    assert figures["retracted"] == 1
    assert figures["delay_s"]["n"] == 1  # user 2's burst was completed before the live phase
    assert figures["delay_s"]["p50"] == 2.5
