"""The live shop-event source the steady generator sends (see :mod:`measure.generator`).

Deterministic for a seed: record ``i`` depends only on the seed and ``i``'s predecessors,
never on the clock, except its times (event time = due time, less a lateness for late
events). Every ``probe_every``-th record is a probe: an ``add_to_cart`` of quantity 1 by
a user of its own (``probe_base + i``), so the probe's cart line in ``cart_state`` shows
when, and how many times, the event became visible.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import UTC, datetime

import orjson

from event_log.schema import event_fields
from measure.generator import Outgoing

PROBE_BASE = 10_000_000


def _fmt(epoch_s: float) -> str:
    moment = datetime.fromtimestamp(epoch_s, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def probe_user(i: int, probe_base: int = PROBE_BASE) -> int:
    """The user id of the probe sent as record ``i``."""
    return probe_base + i


def shop_events(
    seed: int = 1,
    users: int = 200,
    products: int = 100,
    probe_every: int = 50,
    late_fraction: float = 0.02,
    min_lateness_s: float = 30.0,
    max_lateness_s: float = 900.0,
    duplicate_fraction: float = 0.01,
    malformed_fraction: float = 0.005,
    probe_base: int = PROBE_BASE,
) -> Callable[[int, float], Outgoing]:
    """A source ``(i, due) -> Outgoing`` of page views, cart changes and purchases.

    Args:
        seed: the same seed gives the same records (times aside).
        users: regular users ``1..users`` (the history's users).
        products: product ids ``1..products`` (the history's catalog).
        probe_every: every n-th record is a probe (0: none).
        late_fraction: share of events whose event time lies in the past.
        min_lateness_s: smallest lateness of a late event.
        max_lateness_s: largest lateness of a late event.
        duplicate_fraction: share of records that re-send the previous event (same id).
        malformed_fraction: share of records that are broken JSON.
        probe_base: probe user ids start here.
    """
    rng = random.Random(f"live/{seed}")
    carts: dict[int, dict[int, int]] = {}
    last: list[bytes] = []

    def make(i: int, due: float) -> Outgoing:
        late = rng.random() < late_fraction
        event_time = due - (rng.uniform(min_lateness_s, max_lateness_s) if late else 0.0)
        roll = rng.random()
        if probe_every and i % probe_every == 0:
            user = probe_user(i, probe_base)
            fields = event_fields(
                f"probe{seed}-{i}", "add_to_cart", user, 1 + i % products, 1, 1.0,
                _fmt(event_time), _fmt(due),
            )  # fmt: skip
            return Outgoing(str(user).encode(), orjson.dumps(fields), f"{user}", event_time)
        if last and roll < duplicate_fraction:
            return Outgoing(last[0], last[1])
        user = rng.randint(1, users)
        key = str(user).encode()
        if roll < duplicate_fraction + malformed_fraction:
            return Outgoing(key, b'{"event_id": "broken-' + str(i).encode() + b'", "event_ty')
        cart = carts.setdefault(user, {})
        pid = rng.randint(1, products)
        kind, qty, price = "page_view", None, None
        choice = rng.random()
        if cart and choice < 0.15:
            pid = rng.choice(sorted(cart))
            kind, qty, price = "purchase", cart.pop(pid), round(rng.uniform(1, 200), 2)
        elif choice < 0.40:
            kind, qty, price = "add_to_cart", rng.randint(1, 3), round(rng.uniform(1, 200), 2)
            cart[pid] = cart.get(pid, 0) + qty
        fields = event_fields(
            f"live{seed}-{i}", kind, user, pid, qty, price, _fmt(event_time), _fmt(due)
        )
        value = orjson.dumps(fields)
        last[:] = [key, value]
        return Outgoing(key, value, None, event_time)

    return make
