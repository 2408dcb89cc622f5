"""The same code on a Spark standalone cluster and on the object store, by settings alone.

Each scenario runs in a child process (``tests.support.scenarios``) whose only input is
its ``LK_*`` environment: a master URL, an ``s3a://`` root, an endpoint. The child
asserts every served view equals the oracle. CI runs one small pass (a batch run on a
one-worker cluster over the object store); the rest is ``make cluster``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from config.settings import Settings, with_sections
from infra import object_store, spark_cluster
from tests.conftest import REPO, fresh_topics
from tests.support.cluster import (
    explain,
    local_object_store,
    local_spark_cluster,
    run_scenario,
    scenario_env,
)


def _own(settings: Settings, tmp_path) -> Settings:
    """Fresh topics on the session broker, the watchdog's files in the test's folder."""
    return with_sections(fresh_topics(settings), watchdog={"home": tmp_path / "speed"})


@pytest.fixture(scope="module")
def store(kafka_settings, tmp_path_factory) -> Iterator[Settings]:
    with local_object_store(kafka_settings, tmp_path_factory.mktemp("s3")) as settings:
        yield settings


@pytest.fixture(scope="module")
def two_workers(kafka_settings, tmp_path_factory) -> Iterator[Settings]:
    home = tmp_path_factory.mktemp("spark")
    with local_spark_cluster(kafka_settings, home, workers=2) as settings:
        yield settings


def _on(cluster: Settings, store: Settings | None = None) -> Settings:
    """The cluster's Spark settings over another piece's storage (or its own local root)."""
    if store is None:
        return cluster
    return with_sections(store, spark=cluster.spark.model_dump())


@pytest.mark.integration
def test_a_batch_run_on_one_worker_over_the_object_store_equals_the_oracle(
    kafka_settings, tmp_path
):
    """CI's small pass: the S3A connector, a standalone master and the oracle, once."""
    with (
        local_object_store(kafka_settings, tmp_path / "s3") as store,
        local_spark_cluster(kafka_settings, tmp_path / "spark", workers=1) as cluster,
    ):
        settings = _own(_on(cluster, store), tmp_path)
        done = run_scenario("batch", settings)
        assert done.returncode == 0, explain(done)
        assert f"master {cluster.spark.master}, storage s3a://" in done.stdout


@pytest.mark.cluster
@pytest.mark.parametrize("scenario", ["lambda", "kappa"])
def test_on_a_two_worker_cluster_serving_equals_the_oracle(scenario, two_workers, tmp_path):
    done = run_scenario(scenario, _own(two_workers, tmp_path))
    assert done.returncode == 0, explain(done)


@pytest.mark.cluster
@pytest.mark.parametrize("scenario", ["lambda", "kappa"])
def test_on_the_object_store_serving_equals_the_oracle(scenario, store, tmp_path):
    done = run_scenario(scenario, _own(store, tmp_path))
    assert done.returncode == 0, explain(done)


@pytest.mark.cluster
def test_everything_at_once_cluster_and_object_store(two_workers, store, tmp_path):
    done = run_scenario("lambda", _own(_on(two_workers, store), tmp_path))
    assert done.returncode == 0, explain(done)


@pytest.mark.cluster
def test_a_worker_killed_during_a_batch_run_leaves_the_run_correct(two_workers, tmp_path):
    """Spark reschedules the lost executor's tasks on the other worker; the run is exact."""
    settings = _own(two_workers, tmp_path)
    output = tmp_path / "batch.out"
    with output.open("w") as out:
        child = subprocess.Popen(
            [sys.executable, "-m", "tests.support.scenarios", "batch"],
            cwd=REPO,
            env={**os.environ, **scenario_env(settings)},
            stdout=out,
            stderr=subprocess.STDOUT,
            text=True,
        )
    try:
        _wait_for_running_app(settings, child)
        _wait_for_bronze(settings, child)  # the run has landed bronze; its views are next
        assert spark_cluster.kill_worker(settings, 2) is not None
        child.wait(timeout=900)
    finally:
        if child.poll() is None:
            child.kill()
        spark_cluster.up(settings, workers=2)  # the next test has both workers again
    assert child.returncode == 0, f"exit {child.returncode}\n{output.read_text()[-6000:]}"


def _wait_for_bronze(settings: Settings, child, timeout_s: float = 600) -> None:
    """Until the batch run has committed its bronze table (on the local storage root)."""
    from pathlib import Path
    from urllib.parse import unquote, urlparse

    from lake.tables import Tables

    log = Path(unquote(urlparse(Tables.of(settings).bronze).path)) / "_delta_log"
    deadline = time.monotonic() + timeout_s
    while not any(log.glob("*.json")):
        assert child.poll() is None, "the batch run ended before the kill"
        assert time.monotonic() < deadline, "the batch run never landed bronze"
        time.sleep(0.2)


def _wait_for_running_app(settings: Settings, child, timeout_s: float = 300) -> None:
    """Until the child's application holds executors on the cluster."""
    import json
    import urllib.request

    deadline = time.monotonic() + timeout_s
    url = f"http://127.0.0.1:{settings.spark.master_ui_port}/json/"
    while time.monotonic() < deadline:
        assert child.poll() is None, "the batch run ended before the kill"
        with urllib.request.urlopen(url, timeout=5) as reply:
            apps = json.load(reply).get("activeapps", [])
        if any(app.get("cores", 0) >= 2 for app in apps):
            return
        time.sleep(0.5)
    raise AssertionError("the batch run never held both workers' cores")


@pytest.mark.cluster
def test_a_speed_layer_sigkilled_with_its_checkpoint_on_the_object_store_recovers(store, tmp_path):
    """``lk speed`` killed after its first commit to S3; the same command again catches up."""
    from chaos.procs import LkProcess, wait_for
    from lake.tables import Tables
    from tests.support.kafka import produce_spec
    from tests.support.scenarios import configured
    from workload.generator import WorkloadSpec

    settings = configured(_own(store, tmp_path))
    done = run_scenario("batch", settings)  # a published run under the lane
    assert done.returncode == 0, explain(done)
    produce_spec(settings, WorkloadSpec(events=1_500, users=40, products=20, seed=34))
    checkpoint = Tables.of(settings).path("lambda", "speed", "checkpoint")
    bucket, prefix = checkpoint.removeprefix("s3a://").split("/", 1)
    s3 = object_store.client(settings)

    def committed() -> int:
        listed = s3.list_objects_v2(Bucket=bucket, Prefix=f"{prefix}/commits/")
        return sum(1 for o in listed.get("Contents", []) if o["Key"].rsplit("/", 1)[-1].isdigit())

    speed = LkProcess(settings, ["speed"], tmp_path / "procs")
    try:
        wait_for(lambda: committed() >= 1, "a micro-batch committed to S3", 900, speed, 0.5)
    finally:
        speed.kill()
    assert committed() >= 1
    done = run_scenario("speed", settings)
    assert done.returncode == 0, explain(done)
