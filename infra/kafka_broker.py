"""Run one single-node KRaft Apache Kafka broker (combined broker + controller) from jars.

Everything lives under ``settings.broker.home``::

    server.properties  log4j2.properties  cluster.id  broker.pid  broker.out
    data/   (log.dirs, formatted once by StorageTool)
    logs/server.log
"""

from __future__ import annotations

import base64
import errno
import logging
import os
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kafka import KafkaAdminClient, TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType, OffsetSpec

from infra import processes
from infra.jars import kafka_classpath
from lk.config import Settings

log = logging.getLogger(__name__)

HOST = "127.0.0.1"
NODE_ID = 1
STOP_TIMEOUT_S = 30.0
_TOPIC_CONFIGS = ("retention.ms", "cleanup.policy")


class BrokerError(RuntimeError):
    """The broker could not be started, reached or stopped; the message says why."""


@dataclass(frozen=True)
class TopicStatus:
    """One topic as the broker reports it."""

    name: str
    partitions: int
    start_offsets: dict[int, int]
    end_offsets: dict[int, int]
    retention_ms: str | None
    cleanup_policy: str | None


@dataclass(frozen=True)
class BrokerStatus:
    """Whether the local broker runs, where, and what its (non-internal) topics hold."""

    running: bool
    pid: int | None
    bootstrap: str
    home: str
    topics: list[TopicStatus] = field(default_factory=list)

    def topic(self, name: str) -> TopicStatus | None:
        """The status of one topic, or ``None`` if the broker does not have it."""
        return next((t for t in self.topics if t.name == name), None)

    def to_dict(self) -> dict[str, Any]:
        """A plain dict (``json.dumps`` turns the partition keys into strings)."""
        return asdict(self)


@dataclass(frozen=True)
class _Paths:
    home: Path

    @property
    def properties(self) -> Path:
        return self.home / "server.properties"

    @property
    def log4j(self) -> Path:
        return self.home / "log4j2.properties"

    @property
    def data(self) -> Path:
        return self.home / "data"

    @property
    def logs(self) -> Path:
        return self.home / "logs"

    @property
    def server_log(self) -> Path:
        return self.logs / "server.log"

    @property
    def stdout(self) -> Path:
        return self.home / "broker.out"

    @property
    def pid(self) -> Path:
        return self.home / "broker.pid"

    @property
    def cluster_id(self) -> Path:
        return self.home / "cluster.id"


def _paths(settings: Settings) -> _Paths:
    return _Paths(settings.broker.home.resolve())


def bootstrap(settings: Settings) -> str:
    """The ``host:port`` the managed broker listens on for clients."""
    return f"{HOST}:{settings.broker.port}"


def render_server_properties(settings: Settings) -> str:
    """The ``server.properties`` of the combined-mode broker, tuned for a small machine."""
    broker = settings.broker
    props: dict[str, str | int] = {
        "process.roles": "broker,controller",
        "node.id": NODE_ID,
        "controller.quorum.voters": f"{NODE_ID}@{HOST}:{broker.controller_port}",
        "listeners": f"PLAINTEXT://{HOST}:{broker.port},CONTROLLER://{HOST}:{broker.controller_port}",
        "advertised.listeners": f"PLAINTEXT://{HOST}:{broker.port}",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "log.dirs": str(_paths(settings).data),
        "num.network.threads": 2,
        "num.io.threads": 2,
        "num.partitions": 1,
        "default.replication.factor": 1,
        "min.insync.replicas": 1,
        "offsets.topic.num.partitions": 1,
        "offsets.topic.replication.factor": 1,
        "transaction.state.log.replication.factor": 1,
        "transaction.state.log.min.isr": 1,
        "transaction.state.log.num.partitions": 1,
        "share.coordinator.state.topic.replication.factor": 1,
        "share.coordinator.state.topic.min.isr": 1,
        "share.coordinator.state.topic.num.partitions": 1,
        "group.initial.rebalance.delay.ms": 0,
        "auto.create.topics.enable": "false",
        "log.cleaner.dedupe.buffer.size": 16 * 1024 * 1024,
        "log.cleaner.backoff.ms": 1000,
        "log.retention.check.interval.ms": 30000,
    }
    lines = ["# Written by infra.kafka_broker; regenerated on every `lk infra up`."]
    lines += [f"{key}={value}" for key, value in props.items()]
    return "\n".join(lines) + "\n"


def render_log4j(settings: Settings) -> str:
    """A log4j2 configuration that writes the broker's log to ``<home>/logs/server.log``."""
    server_log = _paths(settings).server_log
    return "\n".join(
        [
            "status = warn",
            "name = lk-broker",
            "appender.file.type = RollingFile",
            "appender.file.name = FILE",
            f"appender.file.fileName = {server_log}",
            f"appender.file.filePattern = {server_log}.%i",
            "appender.file.layout.type = PatternLayout",
            "appender.file.layout.pattern = [%d] %p %m (%c)%n",
            "appender.file.policies.type = Policies",
            "appender.file.policies.size.type = SizeBasedTriggeringPolicy",
            "appender.file.policies.size.size = 20MB",
            "appender.file.strategy.type = DefaultRolloverStrategy",
            "appender.file.strategy.max = 3",
            "rootLogger.level = INFO",
            "rootLogger.appenderRef.file.ref = FILE",
            "logger.kafka.name = kafka",
            "logger.kafka.level = INFO",
            "logger.apache.name = org.apache.kafka",
            "logger.apache.level = INFO",
            "",
        ]
    )


def new_cluster_id() -> str:
    """16 random bytes, URL-safe base64 without padding (what ``StorageTool random-uuid`` makes)."""
    while True:
        value = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not value.startswith("-"):
            return value


def _java_base(settings: Settings, paths: _Paths) -> list[str]:
    return [
        "java",
        "-Xms256m",
        f"-Xmx{settings.broker.heap}",
        "-Djava.awt.headless=true",
        f"-Dlog4j2.configurationFile=file:{paths.log4j}",
        "-cp",
        kafka_classpath(settings),
    ]


def _format_storage(settings: Settings, paths: _Paths) -> None:
    if (paths.data / "meta.properties").exists():
        return
    if paths.cluster_id.exists():
        cluster_id = paths.cluster_id.read_text().strip()
    else:
        cluster_id = new_cluster_id()
        paths.cluster_id.write_text(cluster_id + "\n")
    cmd = [
        *_java_base(settings, paths),
        "kafka.tools.StorageTool",
        "format",
        "-t",
        cluster_id,
        "-c",
        str(paths.properties),
    ]
    log.info("formatting %s (cluster id %s)", paths.data, cluster_id)
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=paths.home, check=False)
    if done.returncode != 0:
        raise BrokerError(
            f"formatting {paths.data} failed (exit {done.returncode}):\n"
            f"{(done.stdout + done.stderr).strip()[-2000:]}"
        )


def _is_kafka_process(pid: int) -> bool:
    """True if ``pid`` is a live (non-zombie) ``kafka.Kafka`` JVM."""
    with suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)  # reap it if it is our exited child
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return False
    proc = Path("/proc") / str(pid)
    if not proc.exists():
        return True  # no procfs: trust the signal probe
    try:
        state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
        cmdline = (proc / "cmdline").read_bytes()
    except (OSError, IndexError):
        return False
    return state != "Z" and b"kafka.Kafka" in cmdline


def _read_pid(paths: _Paths) -> int | None:
    """The PID of the running broker; a stale PID file is removed (and logged)."""
    if not paths.pid.exists():
        return None
    text = paths.pid.read_text().strip()
    pid = int(text) if text.isdigit() else None
    if pid is not None and _is_kafka_process(pid):
        return pid
    log.warning("removing stale PID file %s (process %s is not running)", paths.pid, text)
    paths.pid.unlink(missing_ok=True)
    return None


def _port_in_use(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((HOST, port))
        except OSError as err:
            return err.errno == errno.EADDRINUSE
    return False


def _log_tail(paths: _Paths) -> str:
    parts = [
        f"--- {p} ---\n{text}"
        for p in (paths.server_log, paths.stdout)
        if (text := processes.tail(p))
    ]
    return "\n".join(parts) or "(the broker wrote no log)"


@contextmanager
def _admin(address: str, timeout_ms: int = 10_000) -> Iterator[KafkaAdminClient]:
    client = KafkaAdminClient(
        bootstrap_servers=address,
        client_id="lk-infra",
        bootstrap_timeout_ms=timeout_ms,
        request_timeout_ms=timeout_ms,
    )
    try:
        yield client
    finally:
        client.close()


def _ready(address: str) -> bool:
    """True once the broker answers metadata and has registered itself (unfenced)."""
    try:
        with _admin(address, timeout_ms=2_000) as admin:
            return bool(admin.describe_cluster().get("brokers"))
    except Exception as err:  # any client error just means "not yet"
        log.debug("broker at %s not ready: %s", address, err)
        return False


def _wait_ready(settings: Settings, paths: _Paths, proc: subprocess.Popen[bytes] | None) -> None:
    deadline = time.monotonic() + settings.broker.start_timeout_s
    address = bootstrap(settings)
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            paths.pid.unlink(missing_ok=True)
            raise BrokerError(
                f"the broker exited with code {proc.returncode} while starting:\n{_log_tail(paths)}"
            )
        if _ready(address):
            return
        time.sleep(0.5)
    raise BrokerError(
        f"the broker at {address} did not answer within {settings.broker.start_timeout_s:.0f} s "
        f"(still running; `lk infra down` stops it):\n{_log_tail(paths)}"
    )


def up(settings: Settings) -> BrokerStatus:
    """Start the broker if it is not running, wait until it answers, and return its status.

    Raises:
        BrokerError: a port is taken by another process, formatting failed, or the broker
            exited or did not answer within ``settings.broker.start_timeout_s``.
    """
    paths = _paths(settings)
    if (pid := _read_pid(paths)) is not None:
        log.info("broker already running (pid %s)", pid)
        _wait_ready(settings, paths, None)
        return status(settings)
    for port in (settings.broker.port, settings.broker.controller_port):
        if _port_in_use(port):
            raise BrokerError(
                f"port {port} on {HOST} is in use by another process; stop it or set "
                f"broker.port / broker.controller_port (LK_BROKER__PORT) to free ports"
            )
    for folder in (paths.home, paths.data, paths.logs):
        folder.mkdir(parents=True, exist_ok=True)
    paths.properties.write_text(render_server_properties(settings))
    paths.log4j.write_text(render_log4j(settings))
    _format_storage(settings, paths)
    cmd = [*_java_base(settings, paths), "kafka.Kafka", str(paths.properties)]
    log.info("starting the broker on %s", bootstrap(settings))
    with paths.stdout.open("ab") as out:
        proc = subprocess.Popen(
            cmd,
            cwd=paths.home,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    paths.pid.write_text(f"{proc.pid}\n")
    _wait_ready(settings, paths, proc)
    log.info("broker ready (pid %s)", proc.pid)
    return status(settings)


def down(settings: Settings, timeout_s: float = STOP_TIMEOUT_S) -> bool:
    """Stop the broker: SIGTERM, then SIGKILL after ``timeout_s``. Fine if it is not running.

    Returns:
        True if a running broker was stopped.
    """
    paths = _paths(settings)
    pid = _read_pid(paths)
    if pid is None:
        return False
    log.info("stopping the broker (pid %s)", pid)
    with suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    while _is_kafka_process(pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    if _is_kafka_process(pid):
        log.warning("broker (pid %s) ignored SIGTERM for %.0f s: killing it", pid, timeout_s)
        with suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        while _is_kafka_process(pid):
            time.sleep(0.1)
    paths.pid.unlink(missing_ok=True)
    return True


def _describe_topics(admin: KafkaAdminClient) -> list[TopicStatus]:
    topics = [t for t in admin.describe_topics() if not t["name"].startswith("__")]
    if not topics:
        return []
    names = sorted(t["name"] for t in topics)
    configs = admin.describe_configs(
        [ConfigResource(ConfigResourceType.TOPIC, n, list(_TOPIC_CONFIGS)) for n in names],
        config_filter="all",
    ).get("topic", {})
    tps = [TopicPartition(t["name"], p["partition_index"]) for t in topics for p in t["partitions"]]
    earliest = admin.list_partition_offsets({tp: OffsetSpec.EARLIEST for tp in tps})
    latest = admin.list_partition_offsets({tp: OffsetSpec.LATEST for tp in tps})
    result = []
    for name in names:
        mine = sorted(tp.partition for tp in tps if tp.topic == name)
        conf = configs.get(name, {})
        result.append(
            TopicStatus(
                name=name,
                partitions=len(mine),
                start_offsets={p: earliest[TopicPartition(name, p)].offset for p in mine},
                end_offsets={p: latest[TopicPartition(name, p)].offset for p in mine},
                retention_ms=conf.get("retention.ms", {}).get("value"),
                cleanup_policy=conf.get("cleanup.policy", {}).get("value"),
            )
        )
    return result


def status(settings: Settings) -> BrokerStatus:
    """Whether the broker runs and, if so, its topics with partitions, offsets and retention."""
    paths = _paths(settings)
    pid = _read_pid(paths)
    base = {"pid": pid, "bootstrap": bootstrap(settings), "home": str(paths.home)}
    if pid is None:
        return BrokerStatus(running=False, **base)
    try:
        with _admin(bootstrap(settings)) as admin:
            topics = _describe_topics(admin)
    except Exception as err:
        raise BrokerError(f"broker pid {pid} runs but does not answer: {err}") from err
    return BrokerStatus(running=True, topics=topics, **base)
