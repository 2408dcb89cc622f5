"""The read API keeps its own OpenAPI description: schemathesis generates the requests.

Every operation is called with values drawn from ``/openapi.json`` (the view names, any
``limit``) and with values that break it; each answer must be a documented status with
a body of the documented schema and content type, and never a server error. Hypothesis
drives schemathesis's strategies directly: its pytest plugin does not run on pytest 9.
"""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def api_schema(client):
    """The API's own description, called in-process through ASGI (its views loaded)."""
    return schemathesis.openapi.from_asgi("/openapi.json", client.app)


#: What each generation mode calls: values that break a description need parameters to break.
CALLED = {
    GenerationMode.POSITIVE: ["GET /health", "GET /views", "GET /views/{name}"],
    GenerationMode.NEGATIVE: ["GET /views/{name}"],
}


def _operations(schema) -> dict[str, schemathesis.APIOperation]:
    return {op.label: op for op in (r.ok() for r in schema.get_all_operations())}


def test_the_description_has_every_endpoint(api_schema) -> None:
    assert sorted(_operations(api_schema)) == CALLED[GenerationMode.POSITIVE]


@pytest.mark.parametrize("mode", list(GenerationMode), ids=lambda m: m.value)
def test_every_answer_is_one_the_description_promises(api_schema, mode) -> None:
    operations = _operations(api_schema)
    for label in CALLED[mode]:
        operation = operations[label]

        @given(case=operation.as_strategy(generation_mode=mode))
        @settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
        def call(case) -> None:
            case.call_and_validate()

        try:
            call()
        except Exception as failure:
            raise AssertionError(f"{label} ({mode.value}): {failure}") from failure
