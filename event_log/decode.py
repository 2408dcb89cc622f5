"""Kafka records -> typed events, or a quarantine row with the reason (docs/semantics.md).

One JSON parse with the typed schema serves every good record; only a record that fails
it is parsed a second time, as strings, to tell a missing field from a mistyped one.
These functions are pure ``DataFrame -> DataFrame`` and run unchanged on batch and
streaming frames.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from event_log.schema import CART_TYPES, EVENT_TYPES, REQUIRED_FIELDS, SCHEMA_VERSION

PRICE = T.DecimalType(12, 2)
AMOUNT = T.DecimalType(18, 2)
TIME_FORMAT = "yyyy-MM-dd'T'HH:mm:ss.SSS'Z'"
_CORRUPT = "_corrupt"
_OPTIONS = {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": _CORRUPT}

_TYPED = T.StructType(
    [
        T.StructField("event_id", T.StringType()),
        T.StructField("event_type", T.StringType()),
        T.StructField("user_id", T.LongType()),
        T.StructField("product_id", T.LongType()),
        T.StructField("quantity", T.IntegerType()),
        T.StructField("price", PRICE),
        T.StructField("event_time", T.StringType()),
        T.StructField("sent_time", T.StringType()),
        T.StructField("schema_version", T.IntegerType()),
        T.StructField(_CORRUPT, T.StringType()),
    ]
)
_AS_STRINGS = T.StructType([T.StructField(f.name, T.StringType()) for f in _TYPED.fields])

#: The columns of a decoded, valid event as every view receives it.
EVENT_SCHEMA = T.StructType(
    [
        T.StructField("event_id", T.StringType(), False),
        T.StructField("event_type", T.StringType(), False),
        T.StructField("user_id", T.LongType(), False),
        T.StructField("product_id", T.LongType(), False),
        T.StructField("quantity", T.IntegerType()),
        T.StructField("price", PRICE),
        T.StructField("event_time", T.TimestampType(), False),
        T.StructField("sent_time", T.TimestampType()),
        T.StructField("partition", T.IntegerType(), False),
        T.StructField("offset", T.LongType(), False),
        T.StructField("kafka_timestamp", T.TimestampType()),
    ]
)
EVENT_COLUMNS = [f.name for f in EVENT_SCHEMA.fields]
QUARANTINE_COLUMNS = ["partition", "offset", "kafka_timestamp", "key", "value", "reason"]


def _reason(typed: Column, raw: Column) -> Column:
    """The first failing rule, in the contract's order; null for a valid event."""

    def present(name: str) -> Column:
        return typed[name].isNotNull() | raw[name].isNotNull()

    event_type = typed["event_type"]
    rules: list[tuple[Column, Column | str]] = [
        (typed.isNull() | raw[_CORRUPT].isNotNull(), "invalid_json"),
        (
            F.coalesce(typed["schema_version"] != SCHEMA_VERSION, F.lit(True)),
            "unsupported_schema_version",
        ),
    ]
    for name in REQUIRED_FIELDS:
        missing = ~present(name)
        if name == "event_id":
            missing = missing | (F.coalesce(typed[name], raw[name]) == "")
        rules.append((missing, f"missing_field:{name}"))
    rules += [
        (~event_type.isin(*EVENT_TYPES), "unknown_event_type"),
        (typed["user_id"].isNull(), "invalid_user_id"),
        (typed["product_id"].isNull(), "invalid_product_id"),
        (
            F.try_to_timestamp(typed["event_time"], F.lit(TIME_FORMAT)).isNull(),
            "invalid_event_time",
        ),
        (
            event_type.isin(*CART_TYPES) & F.coalesce(typed["quantity"] < 1, F.lit(True)),
            "invalid_quantity",
        ),
        ((event_type == "purchase") & F.coalesce(typed["price"] < 0, F.lit(True)), "invalid_price"),
    ]
    reason: Column = F.lit(None).cast("string")
    for condition, label in reversed(rules):
        reason = F.when(condition, F.lit(label)).otherwise(reason)
    return reason


def decode_events(raw: DataFrame) -> DataFrame:
    """Decode Kafka rows (``key``, ``value``, ``partition``, ``offset``, ``timestamp``).

    Returns the typed event columns plus the raw ``key``/``value`` and ``reason``
    (null when the event is valid).
    """
    text = F.col("value").cast("string")
    typed = F.from_json(text, _TYPED, _OPTIONS)
    with_typed = raw.select(
        "key",
        "value",
        "partition",
        "offset",
        F.col("timestamp").alias("kafka_timestamp"),
        typed.alias("_t"),
    )
    strings = F.when(
        F.col("_t").isNull() | F.col(f"_t.{_CORRUPT}").isNotNull(),
        F.from_json(text, _AS_STRINGS, _OPTIONS),
    )
    parsed = with_typed.withColumn("_s", strings)
    t, s = F.col("_t"), F.col("_s")
    return parsed.select(
        t["event_id"].alias("event_id"),
        t["event_type"].alias("event_type"),
        t["user_id"].alias("user_id"),
        t["product_id"].alias("product_id"),
        t["quantity"].alias("quantity"),
        t["price"].alias("price"),
        F.try_to_timestamp(t["event_time"], F.lit(TIME_FORMAT)).alias("event_time"),
        F.try_to_timestamp(t["sent_time"], F.lit(TIME_FORMAT)).alias("sent_time"),
        F.col("partition").cast("int").alias("partition"),
        F.col("offset").cast("long").alias("offset"),
        "kafka_timestamp",
        "key",
        "value",
        _reason(t, s).alias("reason"),
    )


def valid_events(decoded: DataFrame) -> DataFrame:
    """The events that passed every rule, with the view-facing columns only."""
    return decoded.where(F.col("reason").isNull()).select(*EVENT_COLUMNS)


def quarantined(decoded: DataFrame) -> DataFrame:
    """The malformed records: raw bytes, where they were in the log, and why."""
    return decoded.where(F.col("reason").isNotNull()).select(*QUARANTINE_COLUMNS)
