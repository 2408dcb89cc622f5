"""``lk views`` over the example, and bad configuration failing at start with its file named."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from lk.cli.app import app
from tests.conftest import REPO

pytestmark = pytest.mark.unit
EXAMPLE = REPO / "examples" / "sensors"


def config(tmp_path, events: str, module: str) -> str:
    path = tmp_path / "lk.yaml"
    path.write_text(f"events:\n{events}\nviews:\n  module: {module}\n")
    return str(path)


def run(monkeypatch, path: str, *args: str):
    monkeypatch.setenv("LK_CONFIG", path)
    monkeypatch.setenv("COLUMNS", "200")
    return CliRunner().invoke(app, list(args))


EVENTS = (
    f"  schema_file: {EXAMPLE / 'schema.json'}\n  id_field: reading_id\n  time_field: measured_at"
)


def test_lk_views_lists_the_example_views_with_where_they_live(monkeypatch, tmp_path):
    result = run(monkeypatch, config(tmp_path, EVENTS, EXAMPLE / "views.py"), "views")
    assert result.exit_code == 0, result.output
    for text in ("site_temperature", "tumbling 5 min", "sensor_activity", "hopping 15 min"):
        assert text in result.output
    assert "views.py:" in result.output
    default = run(monkeypatch, str(REPO / "lk.example.yaml"), "views", "--json")
    assert default.exit_code == 0 and "revenue_by_category" in default.output


def test_a_schema_that_does_not_parse_fails_at_start_naming_the_file(monkeypatch, tmp_path):
    schema = tmp_path / "bad.ddl"
    schema.write_text("reading_id STRING, measured_at")
    events = f"  schema_file: {schema}\n  id_field: reading_id\n  time_field: measured_at"
    result = run(monkeypatch, config(tmp_path, events, EXAMPLE / "views.py"), "views")
    assert result.exit_code == 2
    assert str(schema) in result.output.replace("\n", "")
    assert "does not parse" in result.output


def test_a_time_column_missing_from_the_schema_fails_at_start(monkeypatch, tmp_path):
    events = EVENTS.replace("time_field: measured_at", "time_field: when")
    result = run(monkeypatch, config(tmp_path, events, EXAMPLE / "views.py"), "views")
    assert result.exit_code == 2
    assert "schema.json" in result.output and "'when' is not in the schema" in result.output


def test_a_view_module_that_fails_to_import_fails_at_start(monkeypatch, tmp_path):
    module = tmp_path / "broken_views.py"
    module.write_text("raise RuntimeError('half-written module')\n")
    result = run(monkeypatch, config(tmp_path, EVENTS, module), "views")
    assert result.exit_code == 2
    flat = result.output.replace("\n", "")
    assert str(module) in flat and "RuntimeError: half-written module" in flat
