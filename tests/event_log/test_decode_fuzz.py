"""Malformed input, fuzzed: every record ends in exactly one place, a valid event or the
quarantine with the contract's reason, in the Spark decoder and the oracle alike."""

from __future__ import annotations

import json
from datetime import datetime

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import oracle
from event_log.decode import decode_events
from tests.support.workload import kafka_frame

pytestmark = [pytest.mark.integration, pytest.mark.chaos]  # the fuzzed-input chaos scenario

TYPES = st.sampled_from(["page_view", "add_to_cart", "remove_from_cart", "purchase", "refund", ""])
NUMBERS = st.one_of(
    st.integers(-3, 10), st.integers(-(2**70), 2**70), st.floats(allow_nan=False, width=32)
)
ODD = st.one_of(st.none(), st.booleans(), st.text(max_size=4), st.lists(st.integers(), max_size=2))
TIMES = st.one_of(
    st.datetimes(datetime(1970, 1, 2), datetime(2100, 1, 1)).map(
        lambda t: t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"
    ),
    st.datetimes().map(lambda t: t.isoformat()),
    st.text(max_size=25),
)
EVENT = st.fixed_dictionaries(
    {},
    optional={
        "event_id": st.one_of(st.text(max_size=6), NUMBERS, ODD),
        "event_type": st.one_of(TYPES, ODD),
        "user_id": st.one_of(NUMBERS, ODD),
        "product_id": st.one_of(NUMBERS, ODD),
        "quantity": st.one_of(NUMBERS, ODD),
        "price": st.one_of(
            st.decimals(-5, 10**6, places=2).map(float), st.decimals(0, 100, places=4).map(float),
            NUMBERS, ODD,
        ),
        "event_time": st.one_of(TIMES, ODD),
        "sent_time": st.one_of(TIMES, ODD),
        "schema_version": st.one_of(st.sampled_from([1, 2, 1.0, "1"]), ODD),
    },
)  # fmt: skip
VALUES = st.one_of(
    EVENT.map(lambda doc: json.dumps(doc).encode()),
    st.binary(max_size=24),
    st.just(None),
    st.one_of(st.integers(), st.lists(st.integers(), max_size=2)).map(
        lambda v: json.dumps(v).encode()
    ),
)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(values=st.lists(VALUES, min_size=1, max_size=20))
@example(values=[b'{"user_id": Infinity}', b'{"price": NaN}', b'{"quantity": -Infinity}'])
def test_each_record_is_an_event_or_quarantined_with_the_oracles_reason(spark, values):
    records = [oracle.RawRecord(0, offset, b"k", value) for offset, value in enumerate(values)]
    events, bad = oracle.decode(records)
    expected = {e.offset: None for e in events} | {q.record.offset: q.reason for q in bad}
    assert sorted(expected) == list(range(len(records))), "the oracle places every record once"

    rows = decode_events(kafka_frame(spark, records)).select("offset", "reason").collect()
    assert sorted(r.offset for r in rows) == list(range(len(records))), "one row per record"
    assert {r.offset: r.reason for r in rows} == expected
