"""The event contract the configuration asks for: ``events:`` in ``lk.yaml``, else the shop's."""

from __future__ import annotations

from config.settings import EventSettings
from event_log.contract import ContractError, EventContract, Rule, read_schema
from event_log.schema import SHOP


def load_contract(events: EventSettings) -> EventContract:
    """Build and check the configured contract (the built-in shop one if no schema is set).

    Raises:
        ContractError: naming the schema (file or ``events.ddl``) and the problem.
    """
    if not events.is_custom:
        if events.id_field or events.time_field or events.key_field or events.rules:
            raise ContractError(
                "events: id_field/time_field/key_field/rules are set but no schema is: "
                "set `ddl` (a Spark DDL string) or `schema_file`"
            )
        return SHOP
    if events.ddl is not None and events.schema_file is not None:
        raise ContractError("events: set either `ddl` or `schema_file`, not both")
    fields, source = read_schema(events.ddl, events.schema_file)
    for role, name in (("id_field", events.id_field), ("time_field", events.time_field)):
        if not name:
            raise ContractError(f"events ({source}): `{role}` is required with a schema")
    return EventContract(
        fields=fields,
        id_field=events.id_field or "",
        time_field=events.time_field or "",
        key_field=events.key_field,
        time_format=events.time_format,
        rules=tuple(Rule(r.reason, r.check) for r in events.rules),
        source=source,
    )
