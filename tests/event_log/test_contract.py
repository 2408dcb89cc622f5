"""The event contract: parsed from DDL or JSON Schema, checked at start with clear messages."""

from __future__ import annotations

import json

import pytest

from config.settings import EventSettings
from event_log.configured import load_contract
from event_log.contract import ContractError, EventContract, parse_ddl, parse_json_schema
from event_log.schema import REQUIRED_FIELDS, SHOP

pytestmark = pytest.mark.unit


def test_ddl_types_not_null_and_comments():
    fields = parse_ddl(
        "id STRING NOT NULL, n BIGINT COMMENT 'count, of things', price DECIMAL(10, 2), "
        "at TIMESTAMP NOT NULL, ok BOOLEAN"
    )
    assert [(f.name, f.type, f.required) for f in fields] == [
        ("id", "STRING", True),
        ("n", "BIGINT", False),
        ("price", "DECIMAL(10,2)", False),
        ("at", "TIMESTAMP", True),
        ("ok", "BOOLEAN", False),
    ]


def test_json_schema_types_formats_and_required():
    doc = {
        "properties": {
            "id": {"type": "string"},
            "at": {"type": "string", "format": "date-time"},
            "x": {"type": ["number", "null"]},
            "n": {"type": "integer"},
            "d": {"type": "number", "x-spark-type": "DECIMAL(12,2)"},
        },
        "required": ["id", "at"],
    }
    fields = parse_json_schema(json.dumps(doc))
    assert [(f.name, f.type, f.required) for f in fields] == [
        ("id", "STRING", True),
        ("at", "TIMESTAMP", True),
        ("x", "DOUBLE", False),
        ("n", "BIGINT", False),
        ("d", "DECIMAL(12,2)", False),
    ]


def test_the_shop_contract_is_the_default_and_keeps_the_documented_order():
    assert load_contract(EventSettings()) is SHOP
    assert SHOP.required == REQUIRED_FIELDS
    assert "schema_version" not in [f.name for f in SHOP.view_fields]


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("id STRING, at", "does not parse"),
        ("id STRING, at MAP<STRING,INT>", "is not supported"),
        ("id STRING, at TIMESTAMP, id INT", "declared twice"),
        ("id STRING, offset BIGINT, at TIMESTAMP", "reserved"),
    ],
)
def test_a_schema_that_does_not_parse_names_the_file(tmp_path, text, problem):
    path = tmp_path / "events.ddl"
    path.write_text(text)
    settings = EventSettings(schema_file=path, id_field="id", time_field="at")
    with pytest.raises(ContractError) as err:
        load_contract(settings)
    assert str(path) in str(err.value) and problem in str(err.value)


def test_a_json_schema_that_is_not_json_names_the_file(tmp_path):
    path = tmp_path / "events.json"
    path.write_text("{not json")
    with pytest.raises(ContractError, match=f"{path}: not valid JSON"):
        load_contract(EventSettings(schema_file=path, id_field="id", time_field="at"))


def test_a_time_column_missing_from_the_schema_names_the_file(tmp_path):
    path = tmp_path / "events.json"
    path.write_text(json.dumps({"properties": {"id": {"type": "string"}}}))
    with pytest.raises(ContractError) as err:
        load_contract(EventSettings(schema_file=path, id_field="id", time_field="when"))
    assert str(path) in str(err.value)
    assert "time field 'when' is not in the schema" in str(err.value)


def test_roles_without_a_schema_and_a_numeric_time_without_an_epoch_format():
    with pytest.raises(ContractError, match="no schema is"):
        load_contract(EventSettings(id_field="id"))
    with pytest.raises(ContractError, match="numeric: time_format must be"):
        load_contract(
            EventSettings(ddl="id STRING, t BIGINT", id_field="id", time_field="t", time_format="x")
        )
    epoch = load_contract(EventSettings(ddl="id STRING, t BIGINT", id_field="id", time_field="t"))
    assert epoch.is_epoch_time


def test_rule_order_places_named_rules():
    contract = EventContract(
        fields=parse_ddl("id STRING, t TIMESTAMP, n INT"),
        id_field="id",
        time_field="t",
        rules=(),
    )
    assert contract.rule_steps() == [[]]
    assert [[r.reason for r in step] for step in SHOP.rule_steps()] == [
        ["unsupported_schema_version"],
        ["unknown_event_type"],
        ["invalid_quantity"],
        ["invalid_price"],
    ]
