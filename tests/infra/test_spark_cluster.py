"""The local Spark standalone cluster: Spark's own Master and Worker on loopback."""

from __future__ import annotations

import pytest

from config.settings import load_settings
from infra import spark_cluster


@pytest.mark.unit
def test_master_and_workers_bind_to_loopback_on_ports_apart_from_airflow(tmp_path):
    settings = load_settings(spark={"cluster_home": str(tmp_path)})
    master = spark_cluster.master_command(settings)
    assert master[1:] == [
        "org.apache.spark.deploy.master.Master",
        "--host",
        "127.0.0.1",
        "--port",
        "7077",
        "--webui-port",
        "8280",
    ]
    assert master[0].endswith("pyspark/bin/spark-class")
    worker = spark_cluster.worker_command(settings, 2)
    assert worker[worker.index("--webui-port") + 1] == "8282"
    assert worker[-1] == "spark://127.0.0.1:7077"
    ui_ports = {8280, 8281, 8282}
    airflow = settings.airflow
    assert ui_ports.isdisjoint({airflow.port, airflow.worker_log_port, airflow.trigger_log_port})


@pytest.mark.integration
def test_a_one_worker_cluster_comes_up_alive_and_stops(base_settings, tmp_path):
    from tests.support.cluster import local_spark_cluster

    with local_spark_cluster(base_settings, tmp_path / "spark", workers=1) as settings:
        current = spark_cluster.status(settings)
        assert (current.running, current.alive_workers, current.cores) == (True, 1, 1)
        pids = current.pids
    assert spark_cluster.status(settings).running is False
    assert all(pid is not None for pid in pids.values())


@pytest.mark.unit
def test_down_with_nothing_started_stops_nothing(tmp_path):
    settings = load_settings(spark={"cluster_home": str(tmp_path / "none")})
    assert spark_cluster.down(settings) is False
    assert spark_cluster.status(settings).running is False
