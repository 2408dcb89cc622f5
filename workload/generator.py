"""A seeded, deterministic workload: shop events plus the catalog's change-data-capture.

Each user lives a chronological timeline of sessions (views, cart changes, purchases of
what is in the cart), so carts never go negative and conversions are a real mix. The
send order then gets the disorder real devices produce: jitter, late events, re-sends
with the same ``event_id``, malformed records and skewed device clocks. The same
``WorkloadSpec`` always yields the same records, so any view can be recomputed
independently from them.

``generate`` streams the records in send order without holding the whole workload;
``generate_ahead`` yields the same records computed on another core (a child process).
"""

from __future__ import annotations

import bisect
import heapq
import os
import random
from collections import deque
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from itertools import starmap
from typing import Any, Literal

import orjson

from event_log.schema import Product, event_fields, format_time
from workload.ahead import iterate_ahead

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
    #: stamp each record with the log's append time (the true send time plus a transit
    #: delay of 0-399 ms), as a live log would, instead of leaving it to the broker
    log_time: bool = False


@dataclass(frozen=True, slots=True)
class Record:
    """One Kafka record in send order.

    ``value`` None is a catalog tombstone; ``key`` None (a replayed row without its key
    field) lets the producer pick the partition.
    """

    topic: Literal["events", "catalog"]
    key: bytes | None
    value: bytes | None
    kind: str = "event"
    #: the Kafka record timestamp to send (ms since the epoch); None: the broker's clock
    timestamp_ms: int | None = None


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


# The hot loops below keep time as integer microseconds since 1970-01-01 (UTC) instead
# of datetimes: the same values, several times cheaper. Every conversion rounds exactly as
# the datetime arithmetic it replaces (``timedelta * float`` and ``timedelta(seconds=x)``
# round half to even), so a seed gives the same bytes as the datetime version did.
_US = timedelta(microseconds=1)
_EPOCH = datetime(1970, 1, 1)
_MS = 1_000
_NEVER = 1 << 62
_EXACT_LIMIT = 1 << 40  # below ~12.7 days a float product is within 1e-4 us of exact


def _micros(moment: datetime) -> int:
    """Microseconds since 1970-01-01 UTC (naive datetimes are taken as UTC)."""
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC).replace(tzinfo=None)
    return (moment - _EPOCH) // _US


def _scaler(duration: timedelta) -> Callable[[float], int]:
    """``factor -> (duration * factor)`` in microseconds, rounded as ``timedelta`` does."""
    whole = duration // _US
    if abs(whole) >= _EXACT_LIMIT:
        return lambda factor: (duration * factor) // _US

    def scaled(factor: float) -> int:
        product = whole * factor
        nearest = round(product)
        # The float product is off by far less than 0.001 us; only near a tie can that
        # change the rounding, and there the exact rational product decides.
        if abs(product - nearest) > 0.499:
            return (duration * factor) // _US
        return nearest

    return scaled


def _seconds(seconds: float) -> int:
    """``timedelta(seconds=seconds)`` in microseconds, for finite ``seconds >= 0``."""
    whole = int(seconds)
    return whole * 1_000_000 + round((seconds - whole) * 1e6)


def _time_formatter() -> Callable[[int], str]:
    """``format_time`` for microseconds since the epoch, caching each second's prefix."""
    prefixes: dict[int, str] = {}

    def fmt(micros: int) -> str:
        second, rest = divmod(micros, 1_000_000)
        prefix = prefixes.get(second)
        if prefix is None:
            if len(prefixes) > 100_000:
                prefixes.clear()
            prefix = prefixes[second] = (_EPOCH + timedelta(seconds=second)).isoformat()
        return f"{prefix}.{rest // _MS:03d}Z"

    return fmt


@dataclass(frozen=True)
class _Prices:
    """The catalog as the timelines need it: integer times, float prices, delete times."""

    times: list[list[int]]
    prices: list[list[float]]
    dead: list[int]

    @classmethod
    def of(cls, catalog: _Catalog, products: int) -> _Prices:
        times: list[list[int]] = [[] for _ in range(products + 1)]
        prices: list[list[float]] = [[] for _ in range(products + 1)]
        dead = [_NEVER] * (products + 1)
        for pid, moments in catalog.price_times.items():
            times[pid] = [_micros(m) for m in moments]
            prices[pid] = [float(p) for p in catalog.prices[pid]]
        for pid, moment in catalog.deleted_at.items():
            dead[pid] = _micros(moment)
        return cls(times, prices, dead)


def _user_timeline(
    user: int, budget: int, spec: WorkloadSpec, catalog: _Prices, rng: random.Random
) -> Iterator[tuple[int, int, str, int, int | None, float | None]]:
    """Yield ``(true_time_us, user, type, product, quantity, price)`` in time order."""
    start = _micros(spec.start)
    span = _scaler(spec.span)
    draw, choice, randint, expovariate = rng.random, rng.choice, rng.randint, rng.expovariate
    times, prices, dead, products = catalog.times, catalog.prices, catalog.dead, spec.products
    sessions = max(1, budget // 8)
    starts = sorted(start + span(draw()) for _ in range(sessions))
    per_session = [
        budget // sessions + (1 if i < budget % sessions else 0) for i in range(sessions)
    ]
    cart: dict[int, int] = {}
    viewed: deque[int] = deque(maxlen=5)
    now = start
    for session_start, count in zip(starts, per_session, strict=True):
        now = max(now + _MS, session_start)
        for i in range(count):
            if i:
                # 3% of gaps are 30 minutes; the rest exponential, mean a minute, capped.
                gap = 1_800_000_000 if draw() < 0.03 else _seconds(min(expovariate(1 / 60), 1500))
                now += gap if gap > _MS else _MS
            now -= now % _MS
            roll = draw()
            if cart and roll < 0.17:
                pid = choice(sorted(cart))
                qty = cart.pop(pid)
                price = prices[pid][max(0, bisect.bisect_right(times[pid], now) - 1)]
                yield now, user, "purchase", pid, qty, price
            elif cart and roll < 0.25:
                pid = choice(sorted(cart))
                qty = randint(1, cart[pid])
                cart[pid] -= qty
                if not cart[pid]:
                    del cart[pid]
                yield now, user, "remove_from_cart", pid, qty, None
            elif roll < 0.45 and (live := [p for p in viewed if now < dead[p]]):
                pid = choice(live)
                qty = randint(1, 3)
                cart[pid] = cart.get(pid, 0) + qty
                price = prices[pid][max(0, bisect.bisect_right(times[pid], now) - 1)]
                yield now, user, "add_to_cart", pid, qty, price
            else:
                pid = randint(1, products)
                while now >= dead[pid]:
                    pid = randint(1, products)
                viewed.append(pid)
                yield now, user, "page_view", pid, None, None


def _malformed(kind: str, good: dict[str, Any], encoded: bytes) -> bytes:
    """A broken variant of one event (``good`` is its JSON object, ``encoded`` its bytes)."""
    if kind == "invalid_json":
        return encoded[:-7]
    good = dict(good)
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
    return starmap(Record, _rows(spec))


#: Record's fields: topic, key, value, kind (and the append time with ``log_time``)
_Row = tuple[Any, ...]


def _skews(spec: WorkloadSpec, rng: random.Random) -> list[int]:
    """Each user's device clock offset in microseconds (index 0 unused)."""
    return [0] + [
        timedelta(seconds=rng.uniform(-1, 1) * spec.max_clock_skew.total_seconds()) // _US
        if rng.random() < spec.skewed_users_fraction
        else 0
        for _ in range(spec.users)
    ]


def clock_skews(spec: WorkloadSpec) -> dict[int, timedelta]:
    """How far each user's device clock is ahead of the true time (0 for most users).

    Device times (``event_time``, ``sent_time``) are the true times plus this offset: the
    truth a clock-skew correction is measured against.
    """
    rng = random.Random(spec.seed)
    _build_catalog(spec, rng)
    return {user: skew * _US for user, skew in enumerate(_skews(spec, rng)) if user}


def _transit_ms(n: int) -> int:
    """A deterministic transit delay (0-399 ms) for record ``n``, drawing no random number."""
    return (n * 7919) % 400


def _rows(spec: WorkloadSpec) -> Iterator[_Row]:
    """``generate``'s records as plain tuples (cheap to make and to pickle).

    Send order is ``(send_time, creation sequence)``. Records stream out as soon as
    nothing later generated can precede them: every future record is sent at or after
    the true time of the event being generated, so a heap holds only the records within
    ``jitter``/``max_lateness``/re-send reach of "now".
    """
    rng = random.Random(spec.seed)
    catalog = _build_catalog(spec, rng)
    skews = _skews(spec, rng)
    stamp = spec.log_time
    budgets = [spec.events // spec.users] * spec.users
    for i in range(spec.events % spec.users):
        budgets[i] += 1
    prices = _Prices.of(catalog, spec.products)
    timelines = [
        _user_timeline(user, budget, spec, prices, random.Random(f"{spec.seed}/{user}"))
        for user, budget in enumerate(budgets, start=1)
        if budget
    ]
    keys = [str(user).encode() for user in range(spec.users + 1)]
    fmt = _time_formatter()
    jitter, lateness = _scaler(spec.jitter), _scaler(spec.max_lateness)
    draw = rng.random
    late_fraction, duplicate_fraction = spec.late_fraction, spec.duplicate_fraction
    malformed_fraction, seed = spec.malformed_fraction, spec.seed
    dumps, push, pop = orjson.dumps, heapq.heappush, heapq.heappop
    # (send_time, sequence, record): the heap pops records in send order.
    pending: list[tuple[int, int, _Row]] = [
        (
            _micros(moment),
            seq,
            (
                "catalog",
                str(pid).encode(),
                product.to_json() if product else None,
                "catalog_upsert" if product else "catalog_delete",
                *((_micros(moment) // _MS,) if stamp else ()),
            ),
        )
        for seq, (moment, pid, product) in enumerate(catalog.changes)
    ]
    heapq.heapify(pending)
    seq = len(pending)
    for n, (true_time, user, kind, pid, qty, price) in enumerate(heapq.merge(*timelines)):
        while pending and pending[0][0] <= true_time:
            yield pop(pending)[2]
        send = true_time + jitter(draw())
        late = draw() < late_fraction
        if late:
            send += lateness(0.2 + 0.8 * draw())
        skew = skews[user]
        key = keys[user]
        fields = event_fields(
            f"s{seed}-{n:08d}", kind, user, pid, qty, price,
            fmt(true_time + skew), fmt(send + skew),
        )  # fmt: skip
        value = dumps(fields)
        seq += 1
        kind_label = "late" if late else "event"
        if stamp:
            at = send // _MS + _transit_ms(n)
            push(pending, (send, seq, ("events", key, value, kind_label, at)))
        else:
            push(pending, (send, seq, ("events", key, value, kind_label)))
        if draw() < duplicate_fraction:
            resend = send + _seconds(0.1 + 30 * draw())
            copy = dumps({**fields, "sent_time": fmt(resend + skew)})
            seq += 1
            row = ("events", key, copy, "duplicate")
            push(pending, (resend, seq, (*row, resend // _MS) if stamp else row))
        if draw() < malformed_fraction:
            bad = rng.choice(MALFORMED_KINDS)
            seq += 1
            junk = _malformed(bad, fields, value)
            row = ("events", key, junk, f"malformed:{bad}")
            push(pending, (send, seq, (*row, send // _MS) if stamp else row))
    while pending:
        yield pop(pending)[2]


#: From this many events on, :func:`workload` generates in a child process while sending.
AHEAD_FROM_EVENTS = 20_000


def workload(spec: WorkloadSpec) -> Iterator[Record]:
    """The records ``lk produce`` sends for ``spec``, in send order.

    Large workloads are generated on a second core (:func:`generate_ahead`) so generation
    overlaps sending; the records and their order are the same either way.
    """
    if spec.events >= AHEAD_FROM_EVENTS and (os.cpu_count() or 1) > 1:
        return generate_ahead(spec)
    return generate(spec)


def generate_ahead(spec: WorkloadSpec, *, chunk: int = 1_000, depth: int = 64) -> Iterator[Record]:
    """``generate(spec)``, computed in a child process while the caller consumes it.

    :func:`workload.ahead.iterate_ahead` runs the generator on the second core, up to
    ``chunk * depth`` records ahead; the records arrive in exactly ``generate``'s order.
    The child starts now, not on the first ``next``, so it is forked before the caller
    starts threads of its own (a Kafka producer). An error in the child is raised here;
    closing the iterator early stops the child.
    """
    rows = iterate_ahead(_rows_to_send, (spec,), lambda _: None, chunk=chunk, depth=depth)
    return _as_records(rows)


def _as_records(rows: Generator[_Row]) -> Iterator[Record]:
    try:
        yield from starmap(Record, rows)
    finally:
        rows.close()  # stops the child when the caller closes early


def _rows_to_send(spec: WorkloadSpec) -> tuple[Iterator[_Row], Callable[[], None]]:
    """The child's factory: the record fields, and nothing to report at the end."""
    return _rows(spec), lambda: None


def describe(spec: WorkloadSpec) -> str:
    """A one-line human summary of a spec."""
    return (
        f"{spec.events:,} events, seed {spec.seed}, {spec.users} users, {spec.products} products, "
        f"{format_time(spec.start)} + {spec.span}"
    )
