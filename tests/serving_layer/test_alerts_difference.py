"""The alerts' difference: what a publish sends, given what is served and what the topic says."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lake.source import ServingSource
from serving_layer.alerts import (
    OPEN,
    RETRACTED,
    Alert,
    AlertRecord,
    Cadence,
    difference,
    latest,
    next_bound,
)

pytestmark = pytest.mark.unit

A = Alert(1, "2026-11-01T10:04:00.000Z", 3)
B = Alert(2, "2026-11-01T10:13:00.000Z", 3)
C = Alert(2, "2026-11-01T10:14:00.000Z", 4)


def _by_key(*alerts: Alert) -> dict[str, Alert]:
    return {a.key: a for a in alerts}


def test_the_key_is_the_user_and_the_burst_time():
    assert A.key == "1:2026-11-01T10:04:00.000Z"
    assert Alert.of_json(A.to_json()) == A
    value = b'{"user_id": 2, "burst_at": "t", "purchases": 5, "status": "retracted"}'
    assert Alert.of_json(value) == Alert(2, "t", 5, RETRACTED)


def test_new_bursts_open_and_told_ones_send_nothing():
    assert difference(_by_key(A, B), {}) == _by_key(A, B)
    assert difference(_by_key(A, B), _by_key(A, B)) == {}
    assert difference(_by_key(A, B, C), _by_key(A, B)) == _by_key(C)


def test_a_burst_no_longer_served_is_retracted_once():
    told = _by_key(A, B)
    sent = difference(_by_key(A), told)
    assert sent == {B.key: Alert(2, "2026-11-01T10:13:00.000Z", 3, RETRACTED)}
    assert difference(_by_key(A), {**told, **sent}) == {}


def test_a_retracted_burst_served_again_opens_again():
    told = {A.key: Alert(1, "2026-11-01T10:04:00.000Z", 3, RETRACTED)}
    assert difference(_by_key(A), told) == {A.key: A}
    assert difference({}, told) == {}


def test_a_count_that_grows_is_the_same_burst():
    grown = Alert(1, "2026-11-01T10:04:00.000Z", 5)
    assert difference(_by_key(grown), _by_key(A)) == {}


def test_latest_keeps_the_last_record_per_key():
    retracted = Alert(1, "2026-11-01T10:04:00.000Z", 3, RETRACTED)
    records = [AlertRecord(A, 10, 0), AlertRecord(B, 11, 1), AlertRecord(retracted, 12, 2)]
    assert latest(records) == {A.key: retracted, B.key: B}


_alerts = st.builds(
    Alert,
    st.integers(0, 3),
    st.sampled_from(["2026-11-01T10:00:00.000Z", "2026-11-01T10:01:00.000Z"]),
    st.integers(3, 5),
    st.sampled_from([OPEN, RETRACTED]),
)
_served = st.lists(_alerts.map(lambda a: Alert(a.user_id, a.burst_at, a.purchases)))


@given(served=_served, told=st.lists(_alerts))
def test_after_a_publish_the_topic_says_what_is_served_and_the_next_sends_nothing(served, told):
    served_now, told_now = _by_key(*served), _by_key(*told)
    after = {**told_now, **difference(served_now, told_now)}
    assert {k for k, a in after.items() if a.status == OPEN} == set(served_now)
    assert all(a.status == RETRACTED for k, a in after.items() if k not in served_now)
    assert difference(served_now, after) == {}


def test_a_lane_publishes_after_its_first_commit_then_at_most_every_interval():
    calls: list[int] = []
    cadence = Cadence(lambda: calls.append(1), every_s=3600)
    seen: list[dict] = []
    progress = cadence.following(seen.append)
    progress({"batch_id": 0})
    progress({"batch_id": 1})
    assert seen == [{"batch_id": 0}, {"batch_id": 1}]
    assert calls == [1]
    always = Cadence(lambda: calls.append(2), every_s=0)
    always.after_commit()
    always.after_commit()
    assert calls == [1, 2, 2]


NOON = datetime(2026, 11, 1, 12, 0)
TEN_MIN = timedelta(minutes=10)


def test_a_lane_publish_reads_from_its_last_clock_less_the_lateness_while_the_source_stays():
    run_7 = ServingSource("batch run 7 + speed layer", {}, clock=NOON + TEN_MIN)
    seen = ("batch run 7 + speed layer", NOON)
    assert next_bound(seen, run_7, TEN_MIN, kept=None) == NOON - TEN_MIN
    assert next_bound(seen, run_7, TEN_MIN, kept=NOON - TEN_MIN) == NOON - TEN_MIN


def test_a_lane_publish_is_whole_after_another_source_no_clock_or_a_clock_gone_back():
    run_8 = ServingSource("batch run 8 + speed layer", {}, clock=NOON)
    assert next_bound(("batch run 7 + speed layer", NOON), run_8, TEN_MIN, None) is None
    assert next_bound(None, run_8, TEN_MIN, None) is None
    back = ("batch run 8 + speed layer", NOON - timedelta(seconds=5))
    assert next_bound(back, run_8, TEN_MIN, kept=NOON - TEN_MIN) is None
