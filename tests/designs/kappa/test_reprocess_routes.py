"""``lk kappa reprocess`` and the ``kappa_reprocess`` DAG's tasks make the same decisions.

Each route runs the same story on its own topics and storage, on a real broker: a replay
stopped before its switch, then a reprocess (it must resume the unfinished version, not
start another), then a reprocess under a view that breaks a quality check (Great
Expectations must refuse the switch; the old version keeps serving). The Airflow route
calls the task functions in the order the DAG does, its replay detached (``lk kappa
build``); the CLI route runs ``lk kappa reprocess`` in this process.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from config.settings import Settings, load_settings
from designs.kappa import reprocess as kappa
from designs.kappa.versions import existing_versions, open_version, serving_version, switches
from designs.platform import build
from lake.tables import Tables
from quality.checks import QualityError
from tests.conftest import fresh_topics
from tests.support.env import lk_env
from tests.support.kafka import produce_spec
from workload.generator import WorkloadSpec

pytestmark = pytest.mark.integration
SPEC = WorkloadSpec(events=600, users=20, products=10, seed=31)

VIEW_MODULE = """
from pyspark.sql import functions as F

from views import View


def compute(events, ctx):
    minute = F.window("event_time", "1 minute").start.alias("window_start")
    return events.groupBy(minute, "event_type").agg(F.count("*").alias("events"))


def merge(state):
    return state.groupBy("window_start", "event_type").agg(F.sum("events").alias("events"))


def present(state):
    return state.withColumn("events", {sign}F.col("events"))


VIEWS = [
    View(
        name="{name}",
        key=("window_start", "event_type"),
        compute=compute,
        merge=merge,
        merge_rule="counts add",
        present=present,
        non_negative=("events",),
    )
]
"""


def _module(folder: Path, name: str, sign: str) -> str:
    path = folder / f"{name}.py"
    path.write_text(VIEW_MODULE.replace("{sign}", sign).replace("{name}", name))
    return str(path)


def _state(spark, settings: Settings) -> dict[str, Any]:
    tables = Tables.of(settings)
    return {
        "versions": existing_versions(spark, tables),
        "serving": serving_version(spark, tables),
        "switches": [(s.version, s.action) for s in switches(spark, tables)],
    }


class CliRoute:
    """``lk kappa reprocess`` as its users run it; the replay step alone for a stopped one."""

    def __init__(self, spark) -> None:
        self.spark = spark

    def replay_only(self) -> None:
        settings = load_settings()
        plan = kappa.begin(self.spark, settings)
        lane = open_version(self.spark, settings, plan.version)
        registry = build(settings).registry
        kappa.replay_version(self.spark, settings, lane, registry, plan.target)

    def reprocess(self) -> tuple[str, bool]:
        from lk.cli.app import app

        result = CliRunner().invoke(app, ["kappa", "reprocess"])
        said = result.output.replace("\n", "")
        if result.exit_code == 1 and "data quality check(s) failed" in said:
            assert "negated_counts: expect_column_values_to_be_between(events)" in said
            return "refused", "resumed the unfinished version" in said
        assert result.exit_code == 0, result.output
        return "switched", "resumed the unfinished version" in said


class AirflowRoute:
    """The DAG's tasks in its order: preflight, new_version, caught_up, validate, switch."""

    def replay_only(self) -> dict[str, Any]:
        from lk import detached, tasks

        built = tasks.kappa_new_version(tasks.kappa_preflight(), None)
        deadline = time.monotonic() + 1_200  # a hang guard, not a budget
        while not tasks.kappa_caught_up(built):
            assert time.monotonic() < deadline, "the detached replay never caught up"
            time.sleep(2)
        name = tasks.KAPPA_BUILD.format(version=built["version"])
        while detached.running(load_settings(), name) is not None:  # it exits once caught up
            assert time.monotonic() < deadline, "the detached replay never exited"
            time.sleep(1)
        return built

    def reprocess(self) -> tuple[str, bool]:
        from lk import tasks

        built = self.replay_only()
        try:
            tasks.kappa_validate(built)
        except QualityError as err:  # the DAG's switch is then upstream_failed: never runs
            assert "negated_counts: expect_column_values_to_be_between(events)" in str(err)
            return "refused", built["resumed"]
        done = tasks.kappa_switch(built)
        assert done["version"] == built["version"]
        return "switched", built["resumed"]


# the Airflow route runs the DAG's tasks in processes of their own (2 minutes): make scenarios
@pytest.mark.parametrize("route", ["cli", pytest.param("airflow", marks=pytest.mark.scenario)])
def test_both_routes_resume_a_stopped_replay_and_refuse_a_failing_version(
    route, spark, kafka_settings, monkeypatch, tmp_path
):
    settings = fresh_topics(kafka_settings)
    produce_spec(settings, SPEC)
    good = _module(tmp_path, "event_counts", "")
    bad = _module(tmp_path, "negated_counts", "-")

    def configure(module: str) -> None:
        for key, value in lk_env(settings, LK_MODE="kappa", LK_VIEWS__MODULE=module).items():
            monkeypatch.setenv(key, value)
        monkeypatch.setenv("COLUMNS", "200")

    runner = CliRoute(spark) if route == "cli" else AirflowRoute()

    configure(good)
    runner.replay_only()
    assert _state(spark, settings) == {"versions": [1], "serving": None, "switches": []}

    assert runner.reprocess() == ("switched", True), "v1 is resumed, not replayed anew"
    assert _state(spark, settings) == {"versions": [1], "serving": 1, "switches": [(1, "publish")]}

    configure(bad)
    assert runner.reprocess() == ("refused", False)
    assert _state(spark, settings) == {
        "versions": [1, 2],
        "serving": 1,
        "switches": [(1, "publish")],
    }, "v2 failed its checks: it never served, v1 still does"
