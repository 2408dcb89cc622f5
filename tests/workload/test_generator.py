"""The seeded workload: deterministic, realistic in the ways the views rely on."""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from datetime import datetime, timedelta

import orjson
import pytest

from event_log.schema import Event, format_time
from oracle.decode import validate
from workload.generator import (
    MALFORMED_KINDS,
    Record,
    WorkloadSpec,
    _build_catalog,
    generate,
    generate_ahead,
)

pytestmark = pytest.mark.unit

SPEC = WorkloadSpec(
    events=12_000,
    users=60,
    products=40,
    seed=5,
    late_fraction=0.1,
    duplicate_fraction=0.05,
    malformed_fraction=0.03,
    catalog_updates=30,
    catalog_deletes=8,
)
#: No clock skew: ``event_time`` is then the true time, comparable with catalog times.
UNSKEWED = WorkloadSpec(**{**SPEC.__dict__, "skewed_users_fraction": 0.0, "seed": 9})
SENT = ("event", "late", "duplicate")
MS = timedelta(milliseconds=1)


@pytest.fixture(scope="module")
def records() -> list[Record]:
    return list(generate(SPEC))


@pytest.fixture(scope="module")
def unskewed() -> list[Record]:
    return list(generate(UNSKEWED))


def time_of(text: str) -> datetime:
    return datetime.fromisoformat(text.removesuffix("Z"))


def events_of(records: list[Record], kinds: tuple[str, ...] = SENT) -> list[dict]:
    return [orjson.loads(r.value) for r in records if r.kind in kinds]


def test_same_seed_same_records(records: list[Record]) -> None:
    assert list(generate(SPEC)) == records


def test_generating_ahead_in_a_child_process_gives_the_same_records(
    records: list[Record],
) -> None:
    assert list(generate_ahead(SPEC, chunk=500)) == records


def test_closing_generate_ahead_early_stops_the_child() -> None:
    import multiprocessing

    ahead = generate_ahead(WorkloadSpec(events=200_000), chunk=100)
    assert next(ahead).topic == "catalog"
    ahead.close()
    assert not [p for p in multiprocessing.active_children() if p.name == "lk-ahead"]


def test_an_error_in_the_generator_process_is_raised_in_the_caller() -> None:
    with pytest.raises(ZeroDivisionError):  # the child's own exception, unpickled
        list(generate_ahead(WorkloadSpec(users=0)))


def test_different_seeds_differ(records: list[Record]) -> None:
    other = list(generate(WorkloadSpec(**{**SPEC.__dict__, "seed": SPEC.seed + 1})))
    assert [r.value for r in other] != [r.value for r in records]


def test_counts_match_the_knobs(records: list[Record]) -> None:
    kinds = Counter(r.kind for r in records)
    malformed = sum(n for kind, n in kinds.items() if kind.startswith("malformed:"))
    assert kinds["event"] + kinds["late"] == SPEC.events
    # Binomial counts; the tolerances are about five standard deviations.
    assert abs(kinds["late"] - SPEC.events * SPEC.late_fraction) < 170
    assert abs(kinds["duplicate"] - SPEC.events * SPEC.duplicate_fraction) < 120
    assert abs(malformed - SPEC.events * SPEC.malformed_fraction) < 95
    assert kinds["catalog_upsert"] == SPEC.products + SPEC.catalog_updates
    assert kinds["catalog_delete"] == SPEC.catalog_deletes
    assert sum(kinds.values()) == len(records)
    types = Counter(e["event_type"] for e in events_of(records, ("event", "late")))
    assert set(types) == {"page_view", "add_to_cart", "remove_from_cart", "purchase"}
    assert types["page_view"] > types["add_to_cart"] > types["purchase"] > 0


def test_every_user_has_their_own_events_keyed_by_user_id(records: list[Record]) -> None:
    events = [r for r in records if r.topic == "events" and r.kind in SENT]
    users = {orjson.loads(r.value)["user_id"] for r in events}
    assert users == set(range(1, SPEC.users + 1))
    assert all(r.key == str(orjson.loads(r.value)["user_id"]).encode() for r in events)


def test_valid_events_are_what_event_to_json_writes(records: list[Record]) -> None:
    for record in records:
        if record.kind not in SENT:
            continue
        fields = orjson.loads(record.value)
        event = Event(
            **{
                **fields,
                "event_time": time_of(fields["event_time"]),
                "sent_time": time_of(fields["sent_time"]),
            }
        )
        assert event.to_json() == record.value
        assert validate(record.value) is None


def test_carts_never_go_negative_in_true_time_order(records: list[Record]) -> None:
    unique = {e["event_id"]: e for e in events_of(records)}
    by_user: dict[int, list[dict]] = defaultdict(list)
    for event in unique.values():
        by_user[event["user_id"]].append(event)
    checked = 0
    for events in by_user.values():
        # One clock per user (a skew shifts all of them): its event_time order is true order.
        events.sort(key=lambda e: e["event_time"])
        assert len({e["event_time"] for e in events}) == len(events)
        cart: Counter[int] = Counter()
        for event in events:
            pid, qty = event["product_id"], event["quantity"]
            if event["event_type"] == "add_to_cart":
                cart[pid] += qty
            elif event["event_type"] == "remove_from_cart":
                assert 1 <= qty <= cart[pid], event
                cart[pid] -= qty
            elif event["event_type"] == "purchase":
                assert qty == cart[pid] >= 1, event  # a purchase empties the cart line
                assert event["price"] > 0
                cart[pid] = 0
                checked += 1
    assert checked > 100


def test_malformed_records_carry_their_kind(records: list[Record]) -> None:
    malformed = [r for r in records if r.kind.startswith("malformed:")]
    assert {r.kind.removeprefix("malformed:") for r in malformed} == set(MALFORMED_KINDS)
    for record in malformed:
        reason = validate(record.value)
        assert reason is not None and reason.split(":")[0] == record.kind.split(":")[1], (
            record,
            reason,
        )
        assert record.topic == "events"


def test_catalog_deletes_are_tombstones_and_views_stop_at_delete_time(
    unskewed: list[Record],
) -> None:
    catalog = _build_catalog(UNSKEWED, random.Random(UNSKEWED.seed))
    deletes = [r for r in unskewed if r.kind == "catalog_delete"]
    assert len(deletes) == UNSKEWED.catalog_deletes
    assert all(r.topic == "catalog" and r.value is None for r in deletes)
    assert {int(r.key) for r in deletes} == set(catalog.deleted_at)
    assert all(r.value is not None for r in unskewed if r.kind == "catalog_upsert")
    added_before_delete: set[tuple[int, int]] = set()
    after_delete = 0
    for event in sorted(events_of(unskewed), key=lambda e: e["event_time"]):
        deleted = catalog.deleted_at.get(event["product_id"])
        line = (event["user_id"], event["product_id"])
        if deleted is None or time_of(event["event_time"]) < deleted:
            if event["event_type"] == "add_to_cart":
                added_before_delete.add(line)
            continue
        # Nobody views or adds a deleted product. A line already in a cart may still be
        # bought or removed afterwards: that is the "unknown" category of the contract.
        assert event["event_type"] in ("purchase", "remove_from_cart"), event
        assert line in added_before_delete, event
        after_delete += 1
    assert after_delete  # the seed does exercise it


def test_records_come_in_send_order(unskewed: list[Record]) -> None:
    times = []
    for record in unskewed:
        if record.kind == "catalog_upsert":
            times.append(orjson.loads(record.value)["updated_at"])
        elif record.kind in SENT:
            times.append(orjson.loads(record.value)["sent_time"])
    assert times == sorted(times)


def test_late_events_are_sent_up_to_max_lateness_after_their_event_time(
    records: list[Record],
) -> None:
    def delay(event: dict) -> timedelta:
        return time_of(event["sent_time"]) - time_of(event["event_time"])

    on_time = [delay(e) for e in events_of(records, ("event",))]
    late = [delay(e) for e in events_of(records, ("late",))]
    # Times are cut to milliseconds, so a delay can be off by one.
    assert all(-MS <= d <= SPEC.jitter + MS for d in on_time)
    assert all(
        SPEC.max_lateness * 0.2 - MS <= d <= SPEC.max_lateness + SPEC.jitter + MS for d in late
    )
    assert max(late) > SPEC.max_lateness * 0.9
    assert sum(d > SPEC.jitter for d in late) == len(late)


def test_event_times_are_formatted_like_the_schema_says(records: list[Record]) -> None:
    for event in events_of(records)[:500]:
        for name in ("event_time", "sent_time"):
            assert format_time(time_of(event[name])) == event[name]
