"""A local Spark standalone cluster: one master and N workers on 127.0.0.1.

The pyspark wheel has no ``sbin/start-master.sh``, but it ships ``bin/spark-class``,
which runs Spark's own ``Master`` and ``Worker``: the distributed engine a user
outgrows ``local[2]`` into is Spark itself, nothing written here. Sessions reach it
with ``spark.master=spark://127.0.0.1:<spark.master_port>`` and no other change.
Files, under ``spark.cluster_home``::

    master.pid  master.out  worker-<k>.pid  worker-<k>.out  work/  (executors' folders)

The master's web UI listens on ``spark.master_ui_port`` and worker k's on
``spark.worker_ui_port + k - 1`` (Spark's default 8080 is Airflow's).
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import time
import urllib.request
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path

from config.errors import LkError
from config.settings import Settings
from infra import processes
from infra.local import port_free

log = logging.getLogger(__name__)

HOST = "127.0.0.1"
MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
DAEMON_MEMORY = "256m"  # the master's and each worker's own JVM, not what they offer


class SparkClusterError(LkError, RuntimeError):
    """The local Spark cluster could not be started or reached; the message says why."""


@dataclass(frozen=True)
class ClusterStatus:
    """What the master reports: its URL and its live workers (cores and memory they offer)."""

    running: bool
    master_url: str
    ui: str
    pids: dict[str, int | None] = field(default_factory=dict)
    alive_workers: int = 0
    cores: int = 0
    memory_mb: int = 0


def master_url(settings: Settings) -> str:
    """The ``spark://`` URL sessions use to reach the local master."""
    return f"spark://{HOST}:{settings.spark.master_port}"


def _home(settings: Settings) -> Path:
    return settings.spark.cluster_home.resolve()


def _spark_home() -> Path:
    import pyspark  # here, not at the top: `lk` imports this module for every command

    return Path(pyspark.__file__).parent


def _env(settings: Settings) -> dict[str, str]:
    home = _home(settings)
    return {
        **os.environ,
        "SPARK_HOME": str(_spark_home()),
        "SPARK_LOCAL_IP": HOST,
        "SPARK_PUBLIC_DNS": HOST,
        "SPARK_LOG_DIR": str(home),
        "SPARK_WORKER_DIR": str(home / "work"),
        "SPARK_DAEMON_MEMORY": DAEMON_MEMORY,
        "TZ": "UTC",
    }


def master_command(settings: Settings) -> list[str]:
    """``spark-class ... Master`` bound to 127.0.0.1 on the configured ports."""
    spark = settings.spark
    return [
        str(_spark_home() / "bin" / "spark-class"),
        MASTER_CLASS,
        "--host",
        HOST,
        "--port",
        str(spark.master_port),
        "--webui-port",
        str(spark.master_ui_port),
    ]


def worker_command(settings: Settings, worker: int) -> list[str]:
    """``spark-class ... Worker`` number ``worker`` (from 1), registered with the master."""
    spark = settings.spark
    return [
        str(_spark_home() / "bin" / "spark-class"),
        WORKER_CLASS,
        "--host",
        HOST,
        "--webui-port",
        str(spark.worker_ui_port + worker - 1),
        "--cores",
        str(spark.worker_cores),
        "--memory",
        spark.worker_memory,
        "--work-dir",
        str(_home(settings) / "work"),
        master_url(settings),
    ]


def _pid_file(settings: Settings, name: str) -> Path:
    return _home(settings) / f"{name}.pid"


def _start(settings: Settings, name: str, cmd: list[str]) -> None:
    home = _home(settings)
    (home / "work").mkdir(parents=True, exist_ok=True)
    if processes.read_pid(_pid_file(settings, name)) is not None:
        log.info("%s already running", name)
        return
    with (home / f"{name}.out").open("ab") as out:
        child = subprocess.Popen(
            cmd,
            cwd=home,
            env=_env(settings),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    processes.write_pid(_pid_file(settings, name), child.pid)


def _master_json(settings: Settings) -> dict | None:
    try:
        with urllib.request.urlopen(
            f"http://{HOST}:{settings.spark.master_ui_port}/json/", timeout=2
        ) as reply:
            return json.load(reply)
    except (OSError, ValueError):
        return None


def _worker_names(settings: Settings) -> list[str]:
    return sorted(p.stem for p in _home(settings).glob("worker-*.pid"))


def up(settings: Settings, workers: int, timeout_s: float = 120.0) -> ClusterStatus:
    """Start the master and workers 1..``workers`` that are not running; wait until all are ALIVE.

    Raises:
        SparkClusterError: a port is taken, or the cluster did not come up in time.
    """
    spark = settings.spark
    if processes.read_pid(_pid_file(settings, "master")) is None:
        for port in (spark.master_port, spark.master_ui_port):
            if not port_free(port):
                raise SparkClusterError(
                    f"port {port} on {HOST} is in use; set spark.master_port / "
                    "spark.master_ui_port (LK_SPARK__MASTER_PORT) to free ports"
                )
        _start(settings, "master", master_command(settings))
    for worker in range(1, workers + 1):
        _start(settings, f"worker-{worker}", worker_command(settings, worker))
    deadline = time.monotonic() + timeout_s
    while (current := status(settings)).alive_workers < workers:
        if time.monotonic() > deadline or current.pids.get("master") is None:
            logs = "\n".join(
                f"--- {p.name} ---\n{processes.tail(p, 10)}"
                for p in sorted(_home(settings).glob("*.out"))
            )
            raise SparkClusterError(
                f"{current.alive_workers} of {workers} workers alive at {master_url(settings)} "
                f"after {timeout_s:.0f} s:\n{logs}"
            )
        time.sleep(1.0)
    return current


def status(settings: Settings) -> ClusterStatus:
    """The processes this project started and what the master says of its workers."""
    names = ["master", *_worker_names(settings)]
    pids = {name: processes.read_pid(_pid_file(settings, name)) for name in names}
    answer = _master_json(settings) if pids["master"] is not None else None
    alive = [w for w in (answer or {}).get("workers", []) if w.get("state") == "ALIVE"]
    return ClusterStatus(
        running=answer is not None,
        master_url=master_url(settings),
        ui=f"http://{HOST}:{settings.spark.master_ui_port}",
        pids=pids,
        alive_workers=len(alive),
        cores=sum(w.get("cores", 0) for w in alive),
        memory_mb=sum(w.get("memory", 0) for w in alive),
    )


def kill_worker(settings: Settings, worker: int) -> int | None:
    """SIGKILL worker ``worker`` and its executors, as a lost machine would. Returns its PID."""
    pid = processes.read_pid(_pid_file(settings, f"worker-{worker}"))
    if pid is None:
        return None
    log.warning("killing worker %s (pid %s) and its executors with SIGKILL", worker, pid)
    processes.kill_group(pid)
    _pid_file(settings, f"worker-{worker}").unlink(missing_ok=True)
    return pid


def down(settings: Settings, timeout_s: float = 20.0) -> bool:
    """Stop the workers, then the master (SIGTERM, then SIGKILL); true if any was running."""
    names = [*_worker_names(settings), "master"]
    running = {n: pid for n in names if (pid := processes.read_pid(_pid_file(settings, n)))}
    for pid in running.values():
        with suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    while any(processes.group_alive(p) for p in running.values()) and time.monotonic() < deadline:
        time.sleep(0.2)
    for name, pid in running.items():
        processes.kill_group(pid)
        _pid_file(settings, name).unlink(missing_ok=True)
    return bool(running)
