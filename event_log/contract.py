"""The event contract: an event's fields, and which of them is its id, its time and its key.

Every layer decodes, validates, de-duplicates and watermarks through one
:class:`EventContract`, so pointing the platform at other data is a matter of
configuration (``events:`` in ``lk.yaml``). The shop events of ``docs/semantics.md``
are just the default contract (:data:`SHOP`), built the same way.

This module is plain Python (no Spark import): the CLI parses and checks a contract
before any JVM starts. :mod:`event_log.decode` turns it into Spark schemas.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from config.errors import LkError

#: Columns every decoded event carries besides its own fields, and the lanes' own columns.
RESERVED = frozenset(
    {"partition", "offset", "kafka_timestamp", "key", "value", "reason", "late_for", "batch_id",
     "run_id", "part", "lane", "view", "watermark"}
)  # fmt: skip
#: Steps of validation after ``invalid_json``; ``EventContract.order`` arranges them.
MISSING, TYPES, RULES = "missing", "types", "rules"

_SIMPLE = {
    "STRING": "STRING",
    "VARCHAR": "STRING",
    "TEXT": "STRING",
    "INT": "INT",
    "INTEGER": "INT",
    "BIGINT": "BIGINT",
    "LONG": "BIGINT",
    "SMALLINT": "SMALLINT",
    "SHORT": "SMALLINT",
    "TINYINT": "TINYINT",
    "BYTE": "TINYINT",
    "DOUBLE": "DOUBLE",
    "FLOAT": "FLOAT",
    "REAL": "FLOAT",
    "BOOLEAN": "BOOLEAN",
    "BOOL": "BOOLEAN",
    "TIMESTAMP": "TIMESTAMP",
    "DATE": "DATE",
}
INTEGRAL = ("INT", "BIGINT", "SMALLINT", "TINYINT")
EPOCH_FORMATS = ("epoch_seconds", "epoch_millis")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_DECIMAL = re.compile(r"^DECIMAL\s*\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?\)$")
_REASON = re.compile(r"^[a-z][a-z0-9_:]*$")


class ContractError(LkError, ValueError):
    """The event contract is invalid; the message names where it came from and the problem."""

    exit_code = 2
    label = "config error"


@dataclass(frozen=True)
class Field:
    """One event field: its name, a normalized DDL type and whether an event must carry it."""

    name: str
    type: str
    required: bool = False

    @property
    def is_time(self) -> bool:
        """Whether the field holds a point in time (parsed from text on the wire)."""
        return self.type in ("TIMESTAMP", "DATE")


@dataclass(frozen=True)
class Rule:
    """An extra validation rule: events for which ``check`` is not true are quarantined.

    Attributes:
        reason: the quarantine reason (``[a-z][a-z0-9_:]*``).
        check: a Spark SQL boolean expression over the event's typed fields; null counts
            as a failure.
    """

    reason: str
    check: str


@dataclass(frozen=True)
class EventContract:
    """What an event is, and the rules a record must pass to be one.

    Attributes:
        fields: the event's fields, in wire order.
        id_field: the event id; copies with the same id count once (lowest offset wins).
        time_field: the event time (watermarks, windows, lateness).
        key_field: the field whose value is the Kafka key (``lk replay``), or None.
        time_format: a Spark datetime pattern for the time fields when they are text
            (``yyyy-MM-dd HH:mm:ss``); None accepts ISO-8601. For a numeric time field:
            ``epoch_seconds`` or ``epoch_millis``.
        rules: extra validation rules, checked in order.
        order: the validation steps after ``invalid_json``: ``missing``, ``types``,
            ``rules``, or a rule's reason to run that rule at that point.
        lenient: optional fields whose mistyped value reads as null instead of
            quarantining the record.
        wire_only: fields validated on the wire but not handed to views.
        source: where the contract was defined (for messages).
    """

    fields: tuple[Field, ...]
    id_field: str
    time_field: str
    key_field: str | None = None
    time_format: str | None = None
    rules: tuple[Rule, ...] = ()
    order: tuple[str, ...] = (MISSING, TYPES, RULES)
    lenient: tuple[str, ...] = ()
    wire_only: tuple[str, ...] = ()
    source: str = "built-in"
    _by_name: dict[str, Field] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_name", {f.name: f for f in self.fields})
        self._check()

    def _fail(self, problem: str) -> ContractError:
        return ContractError(f"event contract ({self.source}): {problem}")

    def _check(self) -> None:
        names = [f.name for f in self.fields]
        if not names:
            raise self._fail("the schema has no fields")
        for name in names:
            if not _NAME.match(name):
                raise self._fail(f"field name {name!r} is not a plain identifier")
            if name in RESERVED or name.startswith("_"):
                raise self._fail(f"field name {name!r} is reserved by the platform")
        if len(set(names)) != len(names):
            dup = next(n for n in names if names.count(n) > 1)
            raise self._fail(f"field {dup!r} is declared twice")
        for role, name in (("id", self.id_field), ("time", self.time_field)):
            if name not in self._by_name:
                raise self._fail(
                    f"the {role} field {name!r} is not in the schema (fields: {', '.join(names)})"
                )
        if self.key_field is not None and self.key_field not in self._by_name:
            raise self._fail(f"the key field {self.key_field!r} is not in the schema")
        time = self._by_name[self.time_field]
        if time.type in (*INTEGRAL, "DOUBLE", "FLOAT") or time.type.startswith("DECIMAL"):
            if (self.time_format or "epoch_seconds") not in EPOCH_FORMATS:
                raise self._fail(
                    f"the time field {time.name!r} is numeric: time_format must be one of "
                    f"{', '.join(EPOCH_FORMATS)}"
                )
        elif time.type not in ("TIMESTAMP", "STRING"):
            raise self._fail(
                f"the time field {time.name!r} has type {time.type}: use TIMESTAMP, STRING "
                "(with time_format) or a number of epoch seconds/milliseconds"
            )
        reasons = [r.reason for r in self.rules]
        for rule in self.rules:
            if not _REASON.match(rule.reason):
                raise self._fail(f"rule reason {rule.reason!r} must match [a-z][a-z0-9_:]*")
            if not rule.check.strip():
                raise self._fail(f"rule {rule.reason!r} has an empty check")
        for step in self.order:
            if step not in (MISSING, TYPES, RULES) and step not in reasons:
                raise self._fail(f"validation step {step!r} is neither a step nor a rule")
        for name in (*self.lenient, *self.wire_only):
            if name not in self._by_name:
                raise self._fail(f"{name!r} (lenient / wire_only) is not in the schema")
        if {self.id_field, self.time_field} & set(self.wire_only):
            raise self._fail("the id and time fields must reach the views (not wire_only)")

    # -- what layers read --------------------------------------------------------------
    def field(self, name: str) -> Field:
        """The field called ``name``."""
        return self._by_name[name]

    @property
    def names(self) -> tuple[str, ...]:
        """Every field name, in wire order."""
        return tuple(f.name for f in self.fields)

    @property
    def required(self) -> tuple[str, ...]:
        """Fields a valid event must carry (non-null; the id also non-empty), in wire order."""
        needed = {self.id_field, self.time_field}
        return tuple(f.name for f in self.fields if f.required or f.name in needed)

    @property
    def view_fields(self) -> tuple[Field, ...]:
        """The fields handed to views (all but ``wire_only``)."""
        return tuple(f for f in self.fields if f.name not in self.wire_only)

    @property
    def is_epoch_time(self) -> bool:
        """Whether the event time is a number of seconds or milliseconds since the epoch."""
        kind = self.field(self.time_field).type
        return self.time_format in EPOCH_FORMATS or kind not in ("TIMESTAMP", "STRING", "DATE")

    def rule_steps(self) -> list[list[Rule]]:
        """The rules grouped by the step they run in, in ``order``."""
        placed = {s for s in self.order if s not in (MISSING, TYPES, RULES)}
        rest = [r for r in self.rules if r.reason not in placed]
        by_reason = {r.reason: r for r in self.rules}
        return [
            rest if step == RULES else [by_reason[step]]
            for step in self.order
            if step not in (MISSING, TYPES)
        ]

    def describe(self) -> str:
        """One line for humans: the fields and the roles."""
        return (
            f"{len(self.fields)} fields ({', '.join(self.names)}); id {self.id_field}, "
            f"time {self.time_field}, key {self.key_field or '-'} [{self.source}]"
        )


# -- parsing ---------------------------------------------------------------------------
def _split_top(text: str) -> list[str]:
    """Split on commas outside parentheses and quotes."""
    parts, depth, start, quote = [], 0, 0, ""
    for i, char in enumerate(text):
        if quote:
            quote = "" if char == quote else quote
        elif char in "'`\"":
            quote = char
        elif char in "(<":
            depth += 1
        elif char in ")>":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def _normal_type(raw: str, where: str) -> str:
    upper = re.sub(r"\s+", " ", raw.strip().upper())
    if upper in _SIMPLE:
        return _SIMPLE[upper]
    if match := _DECIMAL.match(upper):
        precision, scale = int(match.group(1)), int(match.group(2) or 0)
        if not 0 < precision <= 38 or scale > precision:
            raise ContractError(f"{where}: DECIMAL({precision},{scale}) is out of range")
        return f"DECIMAL({precision},{scale})"
    supported = ", ".join(sorted(set(_SIMPLE.values()))) + ", DECIMAL(p,s)"
    raise ContractError(f"{where}: type {raw.strip()!r} is not supported (use {supported})")


def parse_ddl(ddl: str, source: str = "schema") -> tuple[Field, ...]:
    """Fields of a Spark DDL string: ``name TYPE [NOT NULL] [COMMENT '...'], ...``.

    Raises:
        ContractError: naming ``source`` and the column that does not parse.
    """
    columns = _split_top(ddl)
    if not columns:
        raise ContractError(f"{source}: the schema is empty")
    fields = []
    for column in columns:
        column = re.sub(r"\s+COMMENT\s+'(?:[^'\\]|\\.)*'\s*$", "", column, flags=re.IGNORECASE)
        required = bool(re.search(r"\s+NOT\s+NULL\s*$", column, flags=re.IGNORECASE))
        column = re.sub(r"\s+NOT\s+NULL\s*$", "", column, flags=re.IGNORECASE)
        parts = column.split(None, 1)
        if len(parts) != 2:
            raise ContractError(f"{source}: {column!r} does not parse (expected `name TYPE`)")
        name, kind = parts[0].strip("`"), parts[1].rstrip(":").strip()
        if name.endswith(":"):
            name = name[:-1]
        fields.append(Field(name, _normal_type(kind, f"{source}, column {name!r}"), required))
    return tuple(fields)


_JSON_TYPES = {"string": "STRING", "integer": "BIGINT", "number": "DOUBLE", "boolean": "BOOLEAN"}


def parse_json_schema(text: str, source: str = "schema") -> tuple[Field, ...]:
    """Fields of a JSON Schema object: its ``properties`` and ``required``.

    Types string, integer, number and boolean; ``format: date-time`` is a TIMESTAMP,
    ``format: date`` a DATE; an ``x-spark-type`` key overrides the type
    (``DECIMAL(12,2)``, ``INT``).
    """
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as err:
        raise ContractError(f"{source}: not valid JSON ({err})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("properties"), dict):
        raise ContractError(f"{source}: a JSON Schema object with `properties` is expected")
    required = doc.get("required", [])
    unknown = [r for r in required if r not in doc["properties"]]
    if unknown:
        raise ContractError(f"{source}: required field(s) {unknown} are not in `properties`")
    fields = []
    for name, spec in doc["properties"].items():
        where = f"{source}, property {name!r}"
        if not isinstance(spec, dict):
            raise ContractError(f"{where}: expected an object")
        kind = spec.get("type")
        if isinstance(kind, list):  # ["number", "null"]
            kind = next((k for k in kind if k != "null"), None)
        if "x-spark-type" in spec:
            normal = _normal_type(str(spec["x-spark-type"]), where)
        elif kind == "string" and spec.get("format") == "date-time":
            normal = "TIMESTAMP"
        elif kind == "string" and spec.get("format") == "date":
            normal = "DATE"
        elif kind in _JSON_TYPES:
            normal = _JSON_TYPES[kind]
        else:
            raise ContractError(
                f"{where}: type {kind!r} is not supported (string, integer, number, boolean)"
            )
        fields.append(Field(name, normal, name in required))
    return tuple(fields)


def read_schema(schema: str | None, schema_file: Path | None) -> tuple[tuple[Field, ...], str]:
    """Fields from a DDL string or a schema file, and a name for the source in messages.

    A ``.json`` file is a JSON Schema; any other file holds DDL text.
    """
    if schema_file is not None:
        path = Path(schema_file)
        if not path.is_file():
            raise ContractError(f"events.schema_file {path}: no such file")
        text = path.read_text()
        if path.suffix.lower() == ".json":
            return parse_json_schema(text, str(path)), str(path)
        return parse_ddl(text, str(path)), str(path)
    if schema is None:
        raise ContractError("events: set `schema` (a Spark DDL string) or `schema_file`")
    return parse_ddl(schema, "events.schema"), "events.schema"
