"""What a reader must be served: the oracle's views, less what the contract makes late.

Written from ``docs/semantics.md``: a streaming lane leaves out the events later than a
view's allowed lateness (:func:`oracle.late_events`, decided from the lane's micro-batch
boundaries), except below a Lambda batch run's cutoff, where the batch saw everything.
Tests and the chaos harness compare every serving view with this.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import cast

from config.settings import ViewSettings
from oracle.catalog import CatalogHistory
from oracle.decode import decode, dedup
from oracle.lateness import MicroBatch, late_events
from oracle.records import RawRecord
from oracle.views import VIEW_NAMES, cart_value_by_product, compute_views, revenue_by_category


def add_rows(rows: list[dict], key: tuple[str, ...], sums: tuple[str, ...]) -> list[dict]:
    """Sum rows that share a key (an additive merge, done by hand for the oracle)."""
    merged: dict[tuple, dict] = {}
    for row in rows:
        k = tuple(row[c] for c in key)
        if k in merged:
            for column in sums:
                merged[k][column] += row[column]
        else:
            merged[k] = dict(row)
    return [merged[k] for k in sorted(merged)]


def served_views(
    events: Sequence[RawRecord],
    catalog_for: Mapping[str, dict[int, str]] | dict[int, str],
    views: ViewSettings,
    batches: Sequence[MicroBatch] = (),
    cutoff: Mapping[int, int] | None = None,
    history: CatalogHistory | None = None,
) -> dict[str, list[dict]]:
    """Oracle views over the de-duplicated ``events`` a reader must be served.

    Args:
        events: the raw ``events`` log.
        catalog_for: the catalog state; with a ``cutoff``, ``{"batch": ..., "speed": ...}``
            (revenue joins events below the cutoff with the batch run's catalog).
        views: the view settings (windows, allowed lateness).
        batches: the streaming lane's micro-batches (none: nothing is late).
        cutoff: the served batch run's cutoff (Lambda), if any: events below it are
            served whatever their lateness.
        history: the catalog's versions: a view joining as of event time joins every
            event with the version valid then, whichever layer computed it.
    """
    decoded, _ = decode(events)
    unique = dedup(decoded)
    late = late_events(unique, batches, VIEW_NAMES, views.lateness)
    cut = cutoff or {}
    batch_catalog, speed_catalog = _layer_catalogs(catalog_for, cutoff)
    result: dict[str, list[dict]] = {}
    for name in VIEW_NAMES:
        kept = [
            e
            for e in unique
            if e.offset < cut.get(e.partition, 0) or e.event_id not in late.get(name, set())
        ]
        if name == "cart_value_by_product":  # the newest catalog a layer has read
            result[name] = cart_value_by_product(kept, speed_catalog)
            continue
        if name != "revenue_by_category":
            result[name] = compute_views(kept, {}, views, history)[name]
            continue
        if views.join_rule(name) == "as_of_event_time":
            result[name] = revenue_by_category(kept, {}, views, history)
            continue
        if cutoff is None:
            result[name] = revenue_by_category(kept, batch_catalog, views)
            continue
        below = [e for e in kept if e.offset < cut.get(e.partition, 0)]
        above = [e for e in kept if e.offset >= cut.get(e.partition, 0)]
        result[name] = add_rows(
            revenue_by_category(below, batch_catalog, views)
            + revenue_by_category(above, speed_catalog, views),
            key=("window_start", "window_end", "category"),
            sums=("orders", "revenue"),
        )
    return result


def _layer_catalogs(
    catalog_for: Mapping[str, dict[int, str]] | dict[int, str], cutoff: Mapping[int, int] | None
) -> tuple[dict[int, str], dict[int, str]]:
    """(the batch run's, the speed lane's) catalog.

    With a cutoff ``catalog_for`` names the two, without one it is the catalog of both;
    the union's type cannot say which, so each case is cast.
    """
    if cutoff is None:
        one = cast(dict[int, str], catalog_for)
        return one, one
    layers = cast(Mapping[str, dict[int, str]], catalog_for)
    return layers["batch"], layers["speed"]
