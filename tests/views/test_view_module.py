"""View modules: loaded by name or file into the one registry; bad ones fail at start."""

from __future__ import annotations

import textwrap

import pytest

from config.settings import RuleSettings, Settings, load_settings
from event_log.configured import load_contract
from event_log.contract import ContractError
from event_log.schema import SHOP
from lake.source import PART
from speed_layer import lane_log
from tests.conftest import REPO
from views.loader import ViewModuleError, check_views, load_registry, registry_for
from views.registry import BUILT_IN, RESERVED

EXAMPLE = REPO / "examples" / "sensors"
HEADER = """
from pyspark.sql import functions as F
from views import View

def counts(events, ctx):
    return events.groupBy(F.window("at", "1 minute").alias("w")).count().select(
        F.col("w.start").alias("window_start"), "count")

def merge(state):
    return state.groupBy("window_start").agg(F.sum("count").alias("count"))
"""


def settings_for(tmp_path, body: str, **views: object) -> Settings:
    module = tmp_path / "my_views.py"
    module.write_text(textwrap.dedent(HEADER + body))
    return load_settings(
        events={"ddl": "id STRING, at TIMESTAMP", "id_field": "id", "time_field": "at"},
        views={"module": str(module), **views},
    )


def view(name: str = "per_minute", key: str = "window_start") -> str:
    return f"View(name={name!r}, key=({key!r},), compute=counts, merge=merge, merge_rule='adds')"


@pytest.mark.unit
def test_the_built_in_views_load_through_the_same_module_mechanism():
    registry = registry_for(Settings())
    assert registry.contract is SHOP
    assert list(registry) == list(BUILT_IN)


@pytest.mark.unit
def test_a_file_module_registers_with_views_or_register_and_keeps_built_ins(tmp_path):
    settings = settings_for(tmp_path, f"VIEWS = [{view()}]\nKEEP_BUILT_IN = ['cart_state']")
    registry = registry_for(settings)
    assert registry.names() == ["cart_state", "per_minute"]
    assert registry.contract.time_field == "at"
    by_call = settings_for(
        tmp_path, f"def register(registry):\n    registry.register({view()})", keep_built_in=[]
    )
    assert registry_for(by_call).names() == ["per_minute"]


@pytest.mark.unit
def test_an_importable_module_name_loads_the_example():
    settings = load_settings(
        events={
            "schema_file": str(EXAMPLE / "schema.json"),
            "id_field": "reading_id",
            "time_field": "measured_at",
        },
        views={"module": "examples.sensors.views"},
    )
    assert registry_for(settings).names() == ["site_temperature", "sensor_activity"]


@pytest.mark.unit
def test_a_module_that_fails_to_import_names_the_file(tmp_path):
    settings = settings_for(tmp_path, "import no_such_package_here\nVIEWS = []")
    with pytest.raises(ViewModuleError) as err:
        registry_for(settings)
    assert str(tmp_path / "my_views.py") in str(err.value)
    assert "import failed: ModuleNotFoundError" in str(err.value)
    missing = load_settings(views={"module": "no.such.views"})
    with pytest.raises(ViewModuleError, match=r"view module no\.such\.views: import failed"):
        registry_for(missing)


@pytest.mark.unit
def test_two_views_with_one_name_are_refused_naming_both(tmp_path):
    settings = settings_for(tmp_path, f"VIEWS = [{view()}, {view()}]")
    with pytest.raises(ViewModuleError, match="two views are named 'per_minute'") as err:
        registry_for(settings)
    assert "my_views.py:5" in str(err.value)
    clash = settings_for(tmp_path, f"VIEWS = [{view('cart_state')}]", keep_built_in=["cart_state"])
    with pytest.raises(ViewModuleError, match="two views are named 'cart_state'"):
        registry_for(clash)


@pytest.mark.unit
@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("Per_Minute", "lower-case letters"),
        ("per-minute", "lower-case letters"),
        ("per minute", "lower-case letters"),
        ("1st", "starting with a letter"),
        ("late", "reserved: context, late, part, progress, quarantine, retained"),
        ("part", "use that name for a column of their own"),
    ],
)
def test_a_name_that_cannot_name_a_column_is_refused_naming_the_view(tmp_path, name, reason):
    settings = settings_for(tmp_path, f"VIEWS = [{view(name)}]")
    with pytest.raises(ViewModuleError, match=reason) as err:
        registry_for(settings)
    assert f"view {name!r} (" in str(err.value) and "my_views.py:5" in str(err.value)
    registered = settings_for(
        tmp_path, f"def register(registry):\n    registry.register({view(name)})"
    )
    with pytest.raises(ViewModuleError, match=reason):
        registry_for(registered)


@pytest.mark.unit
def test_unknown_built_ins_and_empty_modules_are_refused(tmp_path):
    with pytest.raises(ViewModuleError, match="unknown built-in view"):
        registry_for(settings_for(tmp_path, f"VIEWS = [{view()}]", keep_built_in=["nope"]))
    with pytest.raises(ViewModuleError, match="neither VIEWS nor register"):
        registry_for(settings_for(tmp_path, ""))


@pytest.mark.integration
def test_a_view_whose_compute_lacks_its_key_columns_fails_on_spark(spark, tmp_path):
    settings = settings_for(tmp_path, f"VIEWS = [{view(key='window_end')}]")
    registry = load_registry(settings, load_contract(settings.events))
    with pytest.raises(ViewModuleError) as err:
        check_views(spark, registry, settings)
    message = str(err.value)
    assert "view 'per_minute' (" in message and "my_views.py" in message
    assert "returns columns window_start, count, but its key names window_end" in message


@pytest.mark.integration
def test_of_several_failing_views_checked_side_by_side_the_first_registered_is_named(
    spark, tmp_path
):
    views = [view("fine"), view("first_bad", key="window_end"), view("second_bad", key="nope")]
    settings = settings_for(tmp_path, f"VIEWS = [{', '.join(views)}]")
    registry = load_registry(settings, load_contract(settings.events))
    with pytest.raises(ViewModuleError, match=r"view 'first_bad' .* key names window_end$"):
        check_views(spark, registry, settings)
    assert not registry.checked


@pytest.mark.integration
def test_a_view_that_asks_spark_for_its_session_passes_the_check_run_on_threads(spark, tmp_path):
    body = """
from pyspark.sql import SparkSession

def counts_in_session(events, ctx):
    assert SparkSession.getActiveSession() is not None, "no active session"
    return counts(events, ctx)

VIEWS = [View(name="per_minute", key=("window_start",), compute=counts_in_session,
              merge=merge, merge_rule="adds")]
"""
    settings = settings_for(tmp_path, body)
    registry = load_registry(settings, load_contract(settings.events))
    check_views(spark, registry, settings)
    assert registry.checked


@pytest.mark.integration
def test_built_in_views_over_other_events_and_bad_rules_fail_on_spark(spark, tmp_path):
    settings = settings_for(tmp_path, f"VIEWS = [{view()}]", keep_built_in=["cart_state"])
    registry = load_registry(settings, load_contract(settings.events))
    with pytest.raises(ViewModuleError, match=r"view 'cart_state' .* compute fails on the events"):
        check_views(spark, registry, settings)
    events = settings.events.model_copy(
        update={"rules": (RuleSettings(reason="r", check="at >>"),)}
    )
    bad_rule = settings.model_copy(update={"events": events})
    registry = load_registry(bad_rule, load_contract(bad_rule.events))
    with pytest.raises(ContractError, match="a rule does not compile"):
        check_views(spark, registry, bad_rule)


@pytest.mark.unit
def test_the_reserved_names_are_the_columns_the_tables_that_keep_views_take():
    kinds = {
        lane_log.LATE,
        lane_log.QUARANTINE,
        lane_log.RETAINED,
        lane_log.CONTEXT,
        lane_log.PROGRESS,
    }
    assert {PART, *kinds} == RESERVED
