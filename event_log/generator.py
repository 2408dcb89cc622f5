"""A seeded, deterministic workload: shop events plus the catalog's change-data-capture.

Each user lives a chronological timeline of sessions (views, cart changes, purchases of
what is in the cart), so carts never go negative and conversions are a real mix. The
send order then gets the disorder real devices produce: jitter, late events, re-sends
with the same ``event_id``, malformed records and skewed device clocks. The same
``WorkloadSpec`` always yields the same records, so any view can be recomputed
independently from them.
"""

from __future__ import annotations

import bisect
import heapq
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Literal

import orjson

from event_log.schema import Event, Product, format_time

CATEGORIES = ("books", "electronics", "garden", "toys", "grocery", "fashion", "sports", "music")
MALFORMED_KINDS = (
    "invalid_json",
    "unsupported_schema_version",
    "missing_field",
    "unknown_event_type",
    "invalid_event_time",
    "invalid_quantity",
    "invalid_price",
)


@dataclass(frozen=True)
class WorkloadSpec:
    """The knobs of a workload; every field has a sensible default."""

    events: int = 10_000
    seed: int = 42
    users: int = 200
    products: int = 100
    start: datetime = datetime(2026, 11, 1)
    span: timedelta = timedelta(hours=6)
    late_fraction: float = 0.02
    max_lateness: timedelta = timedelta(minutes=45)
    jitter: timedelta = timedelta(seconds=5)
    duplicate_fraction: float = 0.01
    malformed_fraction: float = 0.005
    skewed_users_fraction: float = 0.05
    max_clock_skew: timedelta = timedelta(seconds=30)
    catalog_updates: int = 20
    catalog_deletes: int = 5
    category_change_fraction: float = 0.3


@dataclass(frozen=True, slots=True)
class Record:
    """One Kafka record in send order. ``value`` None is a catalog tombstone."""

    topic: Literal["events", "catalog"]
    key: bytes
    value: bytes | None
    kind: str = "event"


@dataclass
class _Catalog:
    """Product history during generation: price timelines and delete times."""

    products: dict[int, Product]
    changes: list[tuple[datetime, int, Product | None]] = field(default_factory=list)
    price_times: dict[int, list[datetime]] = field(default_factory=dict)
    prices: dict[int, list[Decimal]] = field(default_factory=dict)
    deleted_at: dict[int, datetime] = field(default_factory=dict)

    def price_at(self, product_id: int, moment: datetime) -> Decimal:
        times = self.price_times[product_id]
        return self.prices[product_id][max(0, bisect.bisect_right(times, moment) - 1)]

    def live(self, product_id: int, moment: datetime) -> bool:
        deleted = self.deleted_at.get(product_id)
        return deleted is None or moment < deleted


def _price(rng: random.Random) -> Decimal:
    return Decimal(rng.randint(100, 20_000)) / 100


def _build_catalog(spec: WorkloadSpec, rng: random.Random) -> _Catalog:
    opened = spec.start - timedelta(hours=1)
    products = {
        pid: Product(pid, f"Product {pid}", rng.choice(CATEGORIES), _price(rng), opened)
        for pid in range(1, spec.products + 1)
    }
    catalog = _Catalog(products)
    for pid, product in products.items():
        catalog.changes.append((opened, pid, product))
        catalog.price_times[pid] = [opened]
        catalog.prices[pid] = [product.price]
    ids = list(products)
    updates = sorted(
        (spec.start + spec.span * rng.random(), rng.choice(ids))
        for _ in range(spec.catalog_updates)
    )
    for moment, pid in updates:
        old = products[pid]
        category = (
            rng.choice(CATEGORIES) if rng.random() < spec.category_change_fraction else old.category
        )
        new = Product(pid, old.name, category, _price(rng), moment)
        products[pid] = new
        catalog.changes.append((moment, pid, new))
        catalog.price_times[pid].append(moment)
        catalog.prices[pid].append(new.price)
    for pid in rng.sample(ids, min(spec.catalog_deletes, len(ids) - 1)):
        moment = spec.start + spec.span * (0.5 + 0.5 * rng.random())
        catalog.deleted_at[pid] = moment
        catalog.changes.append((moment, pid, None))
    catalog.changes.sort(key=lambda change: change[0])
    return catalog


def _user_timeline(
    user: int, budget: int, spec: WorkloadSpec, catalog: _Catalog, rng: random.Random
) -> Iterator[tuple[datetime, str, int, int | None, Decimal | None]]:
    """Yield ``(true_time, type, product, quantity, price)`` in time order for one user."""
    sessions = max(1, budget // 8)
    starts = sorted(spec.start + spec.span * rng.random() for _ in range(sessions))
    per_session = [
        budget // sessions + (1 if i < budget % sessions else 0) for i in range(sessions)
    ]
    cart: dict[int, int] = {}
    viewed: list[int] = []
    now = spec.start
    for session_start, count in zip(starts, per_session, strict=True):
        now = max(now + timedelta(milliseconds=1), session_start)
        for i in range(count):
            if i:
                gap = (
                    timedelta(minutes=30)
                    if rng.random() < 0.03
                    else timedelta(seconds=min(rng.expovariate(1 / 60), 1500))
                )
                now += max(gap, timedelta(milliseconds=1))
            now = now.replace(microsecond=now.microsecond // 1000 * 1000)
            live = [p for p in viewed[-5:] if catalog.live(p, now)]
            roll = rng.random()
            if cart and roll < 0.17:
                pid = rng.choice(sorted(cart))
                qty = cart.pop(pid)
                yield now, "purchase", pid, qty, catalog.price_at(pid, now)
            elif cart and roll < 0.25:
                pid = rng.choice(sorted(cart))
                qty = rng.randint(1, cart[pid])
                cart[pid] -= qty
                if not cart[pid]:
                    del cart[pid]
                yield now, "remove_from_cart", pid, qty, None
            elif live and roll < 0.45:
                pid = rng.choice(live)
                qty = rng.randint(1, 3)
                cart[pid] = cart.get(pid, 0) + qty
                yield now, "add_to_cart", pid, qty, catalog.price_at(pid, now)
            else:
                pid = rng.randint(1, spec.products)
                while not catalog.live(pid, now):
                    pid = rng.randint(1, spec.products)
                viewed.append(pid)
                yield now, "page_view", pid, None, None


def _malformed(kind: str, event: Event) -> bytes:
    good = orjson.loads(event.to_json())
    if kind == "invalid_json":
        return event.to_json()[:-7]
    if kind == "unsupported_schema_version":
        good["schema_version"] = 99
    elif kind == "missing_field":
        del good["event_time"]
    elif kind == "unknown_event_type":
        good["event_type"] = "refund"
    elif kind == "invalid_event_time":
        good["event_time"] = "yesterday at noon"
    elif kind == "invalid_quantity":
        good["event_type"], good["quantity"] = "add_to_cart", -1
    elif kind == "invalid_price":
        good["event_type"], good["quantity"], good["price"] = "purchase", 1, -5.0
    return orjson.dumps(good)


def generate(spec: WorkloadSpec) -> Iterator[Record]:
    """Yield the workload's records (``events`` and ``catalog``) in send order."""
    rng = random.Random(spec.seed)
    catalog = _build_catalog(spec, rng)
    skews = {
        user: timedelta(seconds=rng.uniform(-1, 1) * spec.max_clock_skew.total_seconds())
        if rng.random() < spec.skewed_users_fraction
        else timedelta(0)
        for user in range(1, spec.users + 1)
    }
    budgets = [spec.events // spec.users] * spec.users
    for i in range(spec.events % spec.users):
        budgets[i] += 1
    timelines = [
        (
            (t, user, kind, pid, qty, price)
            for t, kind, pid, qty, price in _user_timeline(
                user, budget, spec, catalog, random.Random(f"{spec.seed}/{user}")
            )
        )
        for user, budget in enumerate(budgets, start=1)
        if budget
    ]
    # (send_time, sequence, record): sorting on it gives the send order.
    outbox: list[tuple[datetime, int, Record]] = [
        (
            moment,
            seq,
            Record(
                "catalog",
                str(pid).encode(),
                product.to_json() if product else None,
                "catalog_upsert" if product else "catalog_delete",
            ),
        )
        for seq, (moment, pid, product) in enumerate(catalog.changes)
    ]
    seq = len(outbox)
    for n, (true_time, user, kind, pid, qty, price) in enumerate(heapq.merge(*timelines)):
        send = true_time + spec.jitter * rng.random()
        late = rng.random() < spec.late_fraction
        if late:
            send += spec.max_lateness * (0.2 + 0.8 * rng.random())
        skew = skews[user]
        event = Event(
            event_id=f"s{spec.seed}-{n:08d}",
            event_type=kind,
            user_id=user,
            product_id=pid,
            quantity=qty,
            price=price,
            event_time=true_time + skew,
            sent_time=send + skew,
        )
        outbox.append(
            (
                send,
                seq := seq + 1,
                Record("events", event.key(), event.to_json(), "late" if late else "event"),
            )
        )
        if rng.random() < spec.duplicate_fraction:
            resend = send + timedelta(seconds=0.1 + 30 * rng.random())
            copy = Event(**{**_fields(event), "sent_time": resend + skew})
            outbox.append(
                (resend, seq := seq + 1, Record("events", copy.key(), copy.to_json(), "duplicate"))
            )
        if rng.random() < spec.malformed_fraction:
            bad = rng.choice(MALFORMED_KINDS)
            outbox.append(
                (
                    send,
                    seq := seq + 1,
                    Record("events", event.key(), _malformed(bad, event), f"malformed:{bad}"),
                )
            )
    outbox.sort(key=lambda item: (item[0], item[1]))
    for _, _, record in outbox:
        yield record


def _fields(event: Event) -> dict[str, object]:
    return {name: getattr(event, name) for name in Event.__slots__}


def describe(spec: WorkloadSpec) -> str:
    """A one-line human summary of a spec."""
    return (
        f"{spec.events:,} events, seed {spec.seed}, {spec.users} users, {spec.products} products, "
        f"{format_time(spec.start)} + {spec.span}"
    )
