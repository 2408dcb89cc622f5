"""The views computed in plain Python, straight from ``docs/semantics.md``.

Every function takes valid, de-duplicated events and returns ``list[dict]`` rows sorted by
the view's key, with the contract's column names: timestamps as naive UTC ``datetime``,
counts as ``int`` and amounts as ``Decimal`` with 2 places. Windows are aligned to the Unix
epoch; all arithmetic is done on integer milliseconds.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import defaultdict
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from config.settings import ViewSettings
from oracle.catalog import CatalogHistory, category_of
from oracle.clock import corrected_purchases
from oracle.records import Event

VIEW_NAMES = (
    "revenue_by_category",
    "events_by_type",
    "user_sessions",
    "conversions",
    "cart_state",
    "purchase_bursts",
    "corrected_purchases",
    "cart_value_by_product",
)
CART_TYPES = frozenset({"add_to_cart", "remove_from_cart", "purchase"})

_EPOCH = datetime(1970, 1, 1)
_MS = timedelta(milliseconds=1)
_ZERO = Decimal("0.00")

Row = dict[str, Any]


def _ms(moment: datetime) -> int:
    return (moment - _EPOCH) // _MS


def _time(ms: int) -> datetime:
    return _EPOCH + timedelta(milliseconds=ms)


def _span(duration: timedelta, name: str) -> int:
    ms = duration // _MS
    if ms <= 0:
        raise ValueError(f"{name} must be at least 1 ms, got {duration}")
    return ms


def _amount(event: Event) -> Decimal:
    return (event.price or _ZERO) * (event.quantity or 0)


def revenue_by_category(
    events: list[Event],
    catalog: dict[int, str],
    settings: ViewSettings | None = None,
    history: CatalogHistory | None = None,
) -> list[Row]:
    """Purchases per tumbling window and category: ``orders`` and ``revenue``.

    The category is the one in ``catalog`` (rule ``current``), or, when the view's
    ``catalog_join`` is ``as_of_event_time``, the one ``history`` had at the purchase's
    event time.

    Args:
        events: valid, de-duplicated events.
        catalog: ``product_id -> category``; absent products get ``unknown``.
        settings: view settings (``tumbling_window``, ``catalog_join``); the defaults when
            ``None``.
        history: the catalog's versions; needed by the ``as_of_event_time`` rule.

    Returns:
        Rows ``window_start, window_end, category, orders, revenue`` sorted by
        ``(window_start, category)``.
    """
    settings = settings or ViewSettings()
    size = _span(settings.tumbling_window, "tumbling_window")
    as_of = settings.join_rule("revenue_by_category") == "as_of_event_time"
    if as_of and history is None:
        raise ValueError("revenue_by_category joins as of event time: pass the catalog history")
    groups: dict[tuple[int, str], list[Any]] = {}
    for event in events:
        if event.event_type != "purchase":
            continue
        t = _ms(event.event_time)
        category = (
            history.category_at(event.product_id, t)
            if history is not None and as_of
            else category_of(catalog, event.product_id)
        )
        key = (t - t % size, category)
        group = groups.get(key)
        if group is None:
            groups[key] = group = [0, _ZERO]
        group[0] += 1
        group[1] += _amount(event)
    return [
        {
            "window_start": _time(start),
            "window_end": _time(start + size),
            "category": category,
            "orders": orders,
            "revenue": revenue,
        }
        for (start, category), (orders, revenue) in sorted(groups.items())
    ]


def events_by_type(events: list[Event], settings: ViewSettings | None = None) -> list[Row]:
    """Events per hopping window and type, with the exact number of distinct users.

    An event at ``t`` belongs to every window ``[s, s + hop_window)`` with ``s`` a multiple
    of ``hop_slide`` and ``s <= t``: ``hop_window / hop_slide`` windows.

    Args:
        events: valid, de-duplicated events.
        settings: view settings (``hop_window``, ``hop_slide``); the defaults when ``None``.

    Returns:
        Rows ``window_start, window_end, event_type, events, distinct_users,
        distinct_users_approx`` sorted by ``(window_start, event_type)``;
        ``distinct_users_approx`` carries the exact count (the reference for the estimate).
    """
    settings = settings or ViewSettings()
    size = _span(settings.hop_window, "hop_window")
    slide = _span(settings.hop_slide, "hop_slide")
    if size % slide:
        raise ValueError("hop_slide must divide hop_window")
    hops = size // slide  # windows per event
    # First per slide-sized bucket, then each window is the union of `hops` buckets.
    buckets: dict[tuple[int, str], list[Any]] = {}
    for event in events:
        t = _ms(event.event_time)
        key = (t - t % slide, event.event_type)
        bucket = buckets.get(key)
        if bucket is None:
            buckets[key] = bucket = [0, set()]
        bucket[0] += 1
        bucket[1].add(event.user_id)
    windows: dict[tuple[int, str], list[Any]] = {}
    for (base, event_type), (count, users) in buckets.items():
        for k in range(hops):
            start = base - k * slide
            key = (start, event_type)
            window = windows.get(key)
            if window is None:
                windows[key] = window = [0, set()]
            window[0] += count
            window[1] |= users
    return [
        {
            "window_start": _time(start),
            "window_end": _time(start + size),
            "event_type": event_type,
            "events": count,
            "distinct_users": len(users),
            "distinct_users_approx": len(users),
        }
        for (start, event_type), (count, users) in sorted(windows.items())
    ]


def user_sessions(events: list[Event], settings: ViewSettings | None = None) -> list[Row]:
    """Per-user sessions: a gap ``> session_gap`` between consecutive events splits them.

    Events exactly ``session_gap`` apart stay in one session.

    Args:
        events: valid, de-duplicated events.
        settings: view settings (``session_gap``); the defaults when ``None``.

    Returns:
        Rows ``user_id, session_start, session_end, events, purchases, revenue`` sorted by
        ``(user_id, session_start)``; ``session_end`` is the last event's time plus the gap.
    """
    gap = _span((settings or ViewSettings()).session_gap, "session_gap")
    by_user: dict[int, list[tuple[int, Event]]] = defaultdict(list)
    for event in events:
        by_user[event.user_id].append((_ms(event.event_time), event))
    rows: list[Row] = []
    for user_id in sorted(by_user):
        timeline = sorted(by_user[user_id], key=lambda p: (p[0], p[1].partition, p[1].offset))
        session: dict[str, Any] | None = None
        last = 0
        for t, event in timeline:
            if session is None or t - last > gap:
                if session is not None:
                    session["session_end"] = _time(last + gap)
                    rows.append(session)
                session = {
                    "user_id": user_id,
                    "session_start": _time(t),
                    "session_end": None,
                    "events": 0,
                    "purchases": 0,
                    "revenue": _ZERO,
                }
            session["events"] += 1
            if event.event_type == "purchase":
                session["purchases"] += 1
                session["revenue"] += _amount(event)
            last = t
        if session is not None:
            session["session_end"] = _time(last + gap)
            rows.append(session)
    return rows


def conversions(events: list[Event], settings: ViewSettings | None = None) -> list[Row]:
    """Purchases per tumbling window, and how many had a recent view of the same product.

    A purchase at ``p`` is converted when the same user has a ``page_view`` of the same
    product at ``v`` with ``p - conversion_lookback <= v <= p``; it counts once however many
    views match.

    Args:
        events: valid, de-duplicated events.
        settings: view settings (``conversion_window``, ``conversion_lookback``); the
            defaults when ``None``.

    Returns:
        Rows ``window_start, window_end, purchases, converted`` sorted by ``window_start``
        (only windows with at least one purchase).
    """
    settings = settings or ViewSettings()
    size = _span(settings.conversion_window, "conversion_window")
    lookback = settings.conversion_lookback // _MS
    views: dict[tuple[int, int], list[int]] = defaultdict(list)
    purchases: list[Event] = []
    for event in events:
        if event.event_type == "page_view":
            views[(event.user_id, event.product_id)].append(_ms(event.event_time))
        elif event.event_type == "purchase":
            purchases.append(event)
    for times in views.values():
        times.sort()
    windows: dict[int, list[int]] = {}
    for event in purchases:
        p = _ms(event.event_time)
        start = p - p % size
        window = windows.get(start)
        if window is None:
            windows[start] = window = [0, 0]
        window[0] += 1
        viewed = views.get((event.user_id, event.product_id))
        if viewed:
            i = bisect_left(viewed, p - lookback)
            if i < len(viewed) and viewed[i] <= p:
                window[1] += 1
    return [
        {
            "window_start": _time(start),
            "window_end": _time(start + size),
            "purchases": count,
            "converted": converted,
        }
        for start, (count, converted) in sorted(windows.items())
    ]


def cart_state(events: list[Event]) -> list[Row]:
    """Cart lines as the integral of adds minus removes minus purchases.

    Args:
        events: valid, de-duplicated events.

    Returns:
        Rows ``user_id, product_id, quantity, updated_at`` sorted by
        ``(user_id, product_id)``; lines at quantity 0 are left out, negative ones kept.
    """
    lines: dict[tuple[int, int], list[int]] = {}
    for event in events:
        if event.event_type not in CART_TYPES:
            continue
        key = (event.user_id, event.product_id)
        t = _ms(event.event_time)
        line = lines.get(key)
        if line is None:
            lines[key] = line = [0, t]
        change = event.quantity or 0
        line[0] += change if event.event_type == "add_to_cart" else -change
        line[1] = max(line[1], t)
    return [
        {
            "user_id": user_id,
            "product_id": product_id,
            "quantity": quantity,
            "updated_at": _time(updated),
        }
        for (user_id, product_id), (quantity, updated) in sorted(lines.items())
        if quantity != 0
    ]


def purchase_bursts(events: list[Event], settings: ViewSettings | None = None) -> list[Row]:
    """Per user and purchase time ``t``: a burst when ``[t - burst_window, t]`` holds enough.

    Every interval of the sliding window counts; those ending at a purchase are the ones
    where a count can reach the threshold, so each distinct purchase time is checked.

    Args:
        events: valid, de-duplicated events.
        settings: view settings (``burst_window``, ``burst_threshold``); the defaults when
            ``None``.

    Returns:
        Rows ``user_id, burst_at, window_start, purchases`` sorted by ``(user_id,
        burst_at)``, where ``purchases >= burst_threshold`` (both interval ends inclusive).
    """
    settings = settings or ViewSettings()
    span = settings.burst_window // _MS
    times: dict[int, list[int]] = defaultdict(list)
    for event in events:
        if event.event_type == "purchase":
            times[event.user_id].append(_ms(event.event_time))
    rows: list[Row] = []
    for user_id in sorted(times):
        moments = sorted(times[user_id])
        for t in sorted(set(moments)):
            inside = bisect_right(moments, t) - bisect_left(moments, t - span)
            if inside >= settings.burst_threshold:
                rows.append(
                    {
                        "user_id": user_id,
                        "burst_at": _time(t),
                        "window_start": _time(t - span),
                        "purchases": inside,
                    }
                )
    return rows


def cart_value_by_product(events: list[Event], catalog: dict[int, str]) -> list[Row]:
    """Per product: cart totals joined with the catalog (a table-table join).

    The cart total is the integral of cart changes over all users (as ``cart_state``);
    the join is inner: a product deleted from the catalog, or whose total is 0, has no
    row. ``price`` comes from ``catalog.prices`` when the catalog has them.

    Args:
        events: valid, de-duplicated events.
        catalog: ``product_id -> category`` as :func:`oracle.catalog_state` builds it.

    Returns:
        Rows ``product_id, category, price, in_carts, cart_value`` sorted by product.
    """
    prices: dict[int, Decimal | None] = getattr(catalog, "prices", {})
    totals: dict[int, int] = defaultdict(int)
    for event in events:
        if event.event_type in CART_TYPES:
            change = event.quantity or 0
            totals[event.product_id] += change if event.event_type == "add_to_cart" else -change
    rows: list[Row] = []
    for product_id in sorted(totals):
        if product_id not in catalog or totals[product_id] == 0:
            continue
        price = prices.get(product_id)
        rows.append(
            {
                "product_id": product_id,
                "category": catalog[product_id],
                "price": price,
                "in_carts": totals[product_id],
                "cart_value": None if price is None else price * totals[product_id],
            }
        )
    return rows


def compute_views(
    events: list[Event],
    catalog: dict[int, str],
    settings: ViewSettings | None = None,
    history: CatalogHistory | None = None,
) -> dict[str, list[Row]]:
    """All the views at once.

    Args:
        events: valid, de-duplicated events.
        catalog: ``product_id -> category`` for ``revenue_by_category``.
        settings: view settings; the defaults when ``None``.
        history: the catalog's versions, for a view that joins as of event time.

    Returns:
        ``{view name: rows}`` for every name in :data:`VIEW_NAMES`.
    """
    settings = settings or ViewSettings()
    return {
        "revenue_by_category": revenue_by_category(events, catalog, settings, history),
        "events_by_type": events_by_type(events, settings),
        "user_sessions": user_sessions(events, settings),
        "conversions": conversions(events, settings),
        "cart_state": cart_state(events),
        "purchase_bursts": purchase_bursts(events, settings),
        "corrected_purchases": corrected_purchases(events, settings),
        "cart_value_by_product": cart_value_by_product(events, catalog),
    }
