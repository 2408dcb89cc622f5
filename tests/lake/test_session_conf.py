"""What the session factory sets for a cluster master and an ``s3a://`` root, from settings."""

from __future__ import annotations

import sys

import pytest

from config.settings import load_settings
from lake.spark import session_conf
from tests.conftest import REPO

pytestmark = pytest.mark.unit
JARS = {"jars_dir": str(REPO / ".lk/jars/spark")}


def test_a_local_root_on_local_spark_sets_no_cluster_and_no_s3a_option(tmp_path):
    conf = session_conf(load_settings(storage={"root": str(tmp_path)}, spark=JARS))
    assert not any(k.startswith("spark.hadoop.fs.s3a.") for k in conf)
    assert "spark.pyspark.python" not in conf
    assert "/jars/s3/" not in conf["spark.jars"]


def test_a_standalone_master_gets_the_venv_python_and_a_loopback_driver(tmp_path):
    settings = load_settings(
        storage={"root": str(tmp_path)},
        spark={**JARS, "master": "spark://127.0.0.1:7177", "executor_memory": "768m"},
    )
    conf = session_conf(settings)
    assert conf["spark.pyspark.python"] == sys.executable
    assert conf["spark.executorEnv.PYTHONPATH"] == str(REPO)
    assert conf["spark.executor.memory"] == "768m"
    assert conf["spark.driver.host"] == conf["spark.driver.bindAddress"] == "127.0.0.1"


def test_an_s3a_root_gets_the_connector_the_endpoint_and_the_keys():
    settings = load_settings(
        storage={
            "root": "s3a://lake/data",
            "endpoint": "http://127.0.0.1:8333",
            "access_key": "id",
            "secret_key": "secret",
            "jars_dir": str(REPO / ".lk/jars/s3"),
        },
        spark=JARS,
    )
    conf = session_conf(settings)
    assert conf["spark.hadoop.fs.s3a.endpoint"] == "http://127.0.0.1:8333"
    assert conf["spark.hadoop.fs.s3a.connection.ssl.enabled"] == "false"
    assert conf["spark.hadoop.fs.s3a.path.style.access"] == "true"
    assert (conf["spark.hadoop.fs.s3a.access.key"], conf["spark.hadoop.fs.s3a.secret.key"]) == (
        "id",
        "secret",
    )
    assert "hadoop-aws-3.4.2.jar" in conf["spark.jars"]
    assert conf["spark.sql.warehouse.dir"] == "s3a://lake/data/_warehouse"


def test_user_conf_still_wins_over_the_cluster_and_s3a_defaults():
    settings = load_settings(
        storage={"root": "s3a://lake/data", "jars_dir": str(REPO / ".lk/jars/s3")},
        spark={
            **JARS,
            "master": "spark://10.0.0.5:7077",
            "conf": {"spark.hadoop.fs.s3a.path.style.access": "false"},
        },
    )
    conf = session_conf(settings)
    assert conf["spark.hadoop.fs.s3a.path.style.access"] == "false"
    assert "spark.driver.host" not in conf  # a remote master must reach the driver elsewhere


def test_the_fair_scheduler_and_its_pools_are_on_by_default_and_can_be_turned_off(tmp_path):
    root = {"root": str(tmp_path)}
    conf = session_conf(load_settings(storage=root, spark=JARS))
    assert conf["spark.scheduler.mode"] == "FAIR"
    assert conf["spark.scheduler.allocation.file"].endswith("lake/pools.xml")
    off = session_conf(load_settings(storage=root, spark={**JARS, "scheduler_pools": False}))
    assert "spark.scheduler.mode" not in off
