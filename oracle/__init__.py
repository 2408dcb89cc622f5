"""The independent oracle: the event contract and the views in plain Python.

This package re-implements ``docs/semantics.md`` (decoding and validation of the
``events`` topic, de-duplication, the catalog table and its history, and the views
``revenue_by_category``, ``events_by_type``, ``user_sessions``, ``conversions``,
``cart_state``, ``purchase_bursts``, ``corrected_purchases`` and
``cart_value_by_product``) with the standard library only, written from the contract
and never from the Spark code, so that tests can compare what the batch layer, the speed
layer and a Kappa replay produce against an answer computed a second, independent way.
"""

from oracle.catalog import (
    UNKNOWN_CATEGORY,
    CatalogHistory,
    CatalogTable,
    catalog_history,
    catalog_state,
    category_of,
)
from oracle.clock import corrected_purchases, device_offsets, distance, purchases_by_minute
from oracle.decode import EVENT_TYPES, decode, dedup, parse_event_time, parse_price, validate
from oracle.lateness import MicroBatch, late_events
from oracle.log import consume_all
from oracle.records import Event, Quarantined, RawRecord
from oracle.served import add_rows, served_views
from oracle.views import (
    VIEW_NAMES,
    cart_state,
    cart_value_by_product,
    compute_views,
    conversions,
    events_by_type,
    purchase_bursts,
    revenue_by_category,
    user_sessions,
)

__all__ = [
    "EVENT_TYPES",
    "UNKNOWN_CATEGORY",
    "VIEW_NAMES",
    "CatalogHistory",
    "CatalogTable",
    "Event",
    "MicroBatch",
    "Quarantined",
    "RawRecord",
    "add_rows",
    "cart_state",
    "cart_value_by_product",
    "catalog_history",
    "catalog_state",
    "category_of",
    "compute_views",
    "consume_all",
    "conversions",
    "corrected_purchases",
    "decode",
    "dedup",
    "device_offsets",
    "distance",
    "events_by_type",
    "late_events",
    "parse_event_time",
    "parse_price",
    "purchase_bursts",
    "purchases_by_minute",
    "revenue_by_category",
    "served_views",
    "user_sessions",
    "validate",
]
