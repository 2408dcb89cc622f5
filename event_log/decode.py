"""Kafka records -> typed events, or a quarantine row with the reason (docs/semantics.md).

Everything here follows an :class:`~event_log.contract.EventContract`: the typed schema,
the checks and their order, the id and time fields. One JSON parse with the typed schema
serves every good record; only a record that fails it is parsed a second time, as
strings, to tell a missing field from a mistyped one. A record is quarantined with the
**first** failing reason: ``invalid_json``, then the contract's ``order`` of
``missing_field:<f>``, ``invalid_<f>`` (a value of the wrong type, or a time that does not
parse) and its extra rules. These functions are pure ``DataFrame -> DataFrame`` and run
unchanged on batch and streaming frames.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from event_log.contract import MISSING, TYPES, EventContract, Field
from event_log.schema import SHOP

PRICE = T.DecimalType(12, 2)
AMOUNT = T.DecimalType(18, 2)
_CORRUPT = "_corrupt"
# JSON as RFC 8259 has it: ``NaN`` and ``Infinity`` (which Python's ``json.dumps`` writes
# for floats by default, and Spark accepts by default) make a record ``invalid_json``.
_OPTIONS = {
    "mode": "PERMISSIVE",
    "columnNameOfCorruptRecord": _CORRUPT,
    "allowNonNumericNumbers": "false",
}
_META = [
    T.StructField("partition", T.IntegerType(), False),
    T.StructField("offset", T.LongType(), False),
    T.StructField("kafka_timestamp", T.TimestampType()),
]
QUARANTINE_COLUMNS = ["partition", "offset", "kafka_timestamp", "key", "value", "reason"]

_TYPES: dict[str, T.DataType] = {
    "STRING": T.StringType(),
    "INT": T.IntegerType(),
    "BIGINT": T.LongType(),
    "SMALLINT": T.ShortType(),
    "TINYINT": T.ByteType(),
    "DOUBLE": T.DoubleType(),
    "FLOAT": T.FloatType(),
    "BOOLEAN": T.BooleanType(),
    "TIMESTAMP": T.TimestampType(),
    "DATE": T.DateType(),
}


def spark_type(name: str) -> T.DataType:
    """The Spark type of a normalized contract type (``BIGINT``, ``DECIMAL(12,2)``...)."""
    if name.startswith("DECIMAL("):
        precision, scale = name[len("DECIMAL(") : -1].split(",")
        return T.DecimalType(int(precision), int(scale))
    return _TYPES[name]


def _is_parsed_time(contract: EventContract, f: Field) -> bool:
    """Fields read as text on the wire and parsed into a time."""
    return f.is_time or (f.name == contract.time_field and not contract.is_epoch_time)


def _wire_type(contract: EventContract, f: Field) -> T.DataType:
    return T.StringType() if _is_parsed_time(contract, f) else spark_type(f.type)


def event_schema(contract: EventContract) -> T.StructType:
    """The columns of a decoded, valid event as every view receives it."""
    required = set(contract.required)
    fields = [
        T.StructField(
            f.name,
            T.TimestampType() if f.name == contract.time_field else spark_type(f.type),
            f.name not in required,
        )
        for f in contract.view_fields
    ]
    return T.StructType([*fields, *_META])


def event_columns(contract: EventContract) -> list[str]:
    """Column names of :func:`event_schema`."""
    return [f.name for f in event_schema(contract).fields]


#: The shop contract's decoded events (kept for the shop-specific code and its tests).
EVENT_SCHEMA = event_schema(SHOP)
EVENT_COLUMNS = event_columns(SHOP)
TIME_FORMAT = SHOP.time_format


def _typed_value(contract: EventContract, f: Field, typed: Column) -> Column:
    """A field's view-facing value out of the typed parse (times parsed, dates too)."""
    value = typed[f.name]
    if f.name == contract.time_field and contract.is_epoch_time:
        if contract.time_format == "epoch_millis":
            return F.timestamp_millis(value.cast("long"))
        return F.timestamp_seconds(value)
    if _is_parsed_time(contract, f):
        fmt = contract.time_format
        parsed = F.try_to_timestamp(value, F.lit(fmt)) if fmt else F.try_to_timestamp(value)
        if f.name == contract.time_field:
            return parsed
        return parsed.cast("date") if f.type == "DATE" else parsed
    return value


def _reason(contract: EventContract, typed: Column, raw: Column) -> Column:
    """The first failing check, in the contract's order; null for a valid event."""

    def present(name: str) -> Column:
        return typed[name].isNotNull() | raw[name].isNotNull()

    steps: dict[str, list[tuple[Column, str]]] = {MISSING: [], TYPES: []}
    for name in contract.required:
        missing = ~present(name)
        if name == contract.id_field:
            missing = missing | (F.coalesce(typed[name].cast("string"), raw[name]) == "")
        steps[MISSING].append((missing, f"missing_field:{name}"))
    for f in contract.fields:
        if f.name in contract.lenient:
            continue
        if _is_parsed_time(contract, f) or f.type != "STRING":
            steps[TYPES].append((F.col(f.name).isNull() & present(f.name), f"invalid_{f.name}"))
    rules: list[tuple[Column, str]] = [(typed.isNull() | raw[_CORRUPT].isNotNull(), "invalid_json")]
    groups = iter(contract.rule_steps())
    for step in contract.order:
        if step in steps:
            rules += steps[step]
        else:
            rules += [(~F.coalesce(F.expr(r.check), F.lit(False)), r.reason) for r in next(groups)]
    reason: Column = F.lit(None).cast("string")
    for condition, label in reversed(rules):
        reason = F.when(condition, F.lit(label)).otherwise(reason)
    return reason


def decode_events(raw: DataFrame, contract: EventContract = SHOP) -> DataFrame:
    """Decode Kafka rows (``key``, ``value``, ``partition``, ``offset``, ``timestamp``).

    Returns the contract's view-facing event columns plus the raw ``key``/``value`` and
    ``reason`` (null when the event is valid).
    """
    wire = T.StructType(
        [T.StructField(f.name, _wire_type(contract, f)) for f in contract.fields]
        + [T.StructField(_CORRUPT, T.StringType())]
    )
    as_strings = T.StructType([T.StructField(f.name, T.StringType()) for f in wire.fields])
    text = F.col("value").cast("string")
    with_typed = raw.select(
        "key",
        "value",
        "partition",
        "offset",
        F.col("timestamp").alias("kafka_timestamp"),
        F.from_json(text, wire, _OPTIONS).alias("_t"),
    )
    strings = F.when(
        F.col("_t").isNull() | F.col(f"_t.{_CORRUPT}").isNotNull(),
        F.from_json(text, as_strings, _OPTIONS),
    )
    t, s = F.col("_t"), F.col("_s")
    fields = with_typed.withColumn("_s", strings).select(
        *[_typed_value(contract, f, t).alias(f.name) for f in contract.fields],
        F.col("partition").cast("int").alias("partition"),
        F.col("offset").cast("long").alias("offset"),
        "kafka_timestamp",
        "key",
        "value",
        "_t",
        "_s",
    )
    reason = _reason(contract, t, s)
    return fields.withColumn("reason", reason).drop("_t", "_s", *contract.wire_only)


def valid_events(decoded: DataFrame, contract: EventContract = SHOP) -> DataFrame:
    """The events that passed every rule, with the view-facing columns only."""
    return decoded.where(F.col("reason").isNull()).select(*event_columns(contract))


def quarantined(decoded: DataFrame) -> DataFrame:
    """The malformed records: raw bytes, where they were in the log, and why."""
    return decoded.where(F.col("reason").isNotNull()).select(*QUARANTINE_COLUMNS)
