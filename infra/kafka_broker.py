"""Run a local KRaft Apache Kafka cluster from jars: one node, or ``broker.count`` of them.

Every node is a combined broker + controller. One node lives directly under
``settings.broker.home``; a cluster of ``n`` puts node ``k`` under ``home/node-k`` and
listens on ``broker.port + 2(k-1)`` (controller ``broker.controller_port + 2(k-1)``)::

    server.properties  log4j2.properties  broker.pid  broker.out
    data/   (log.dirs, formatted once by StorageTool; one cluster id in home/cluster.id)
    logs/server.log

Three nodes or more replicate internal topics three times with ``min.insync.replicas=2``,
so one node can die without losing an acknowledged (``acks=all``) record.
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

from config.errors import LkError
from config.settings import Settings
from infra import processes
from infra.jars import kafka_classpath

log = logging.getLogger(__name__)

HOST = "127.0.0.1"
NODE_ID = 1
PORT_STRIDE = 2  # node k listens on port + 2(k-1): a node's two ports never meet the next's
STOP_TIMEOUT_S = 30.0
_TOPIC_CONFIGS = ("retention.ms", "cleanup.policy")


class BrokerError(LkError, RuntimeError):
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
    nodes: dict[int, int | None] = field(default_factory=dict)

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


def nodes(settings: Settings) -> list[int]:
    """The node ids of the local cluster: ``1 .. broker.count``."""
    return list(range(NODE_ID, NODE_ID + settings.broker.count))


def _paths(settings: Settings, node: int = NODE_ID) -> _Paths:
    home = settings.broker.home.resolve()
    return _Paths(home if settings.broker.count == 1 else home / f"node-{node}")


def _cluster_id_file(settings: Settings) -> Path:
    return settings.broker.home.resolve() / "cluster.id"


def ports(settings: Settings, node: int = NODE_ID) -> tuple[int, int]:
    """``(client port, controller port)`` of one node."""
    shift = PORT_STRIDE * (node - NODE_ID)
    return settings.broker.port + shift, settings.broker.controller_port + shift


def address(settings: Settings, node: int = NODE_ID) -> str:
    """The ``host:port`` one node listens on for clients."""
    return f"{HOST}:{ports(settings, node)[0]}"


def bootstrap(settings: Settings) -> str:
    """The ``host:port[,host:port...]`` of every node of the managed cluster."""
    return ",".join(address(settings, node) for node in nodes(settings))


def replication(settings: Settings) -> tuple[int, int]:
    """``(replication factor, min.insync.replicas)``: 3 and 2 from three nodes on."""
    count = settings.broker.count
    return min(count, 3), (2 if count >= 3 else 1)


def render_server_properties(settings: Settings, node: int = NODE_ID) -> str:
    """The ``server.properties`` of one combined-mode node, tuned for a small machine."""
    port, controller = ports(settings, node)
    voters = ",".join(f"{n}@{HOST}:{ports(settings, n)[1]}" for n in nodes(settings))
    factor, min_isr = replication(settings)
    props: dict[str, str | int] = {
        "process.roles": "broker,controller",
        "node.id": node,
        "controller.quorum.voters": voters,
        "listeners": f"PLAINTEXT://{HOST}:{port},CONTROLLER://{HOST}:{controller}",
        "advertised.listeners": f"PLAINTEXT://{HOST}:{port}",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "log.dirs": str(_paths(settings, node).data),
        "num.network.threads": 2,
        "num.io.threads": 2,
        "num.partitions": 1,
        "default.replication.factor": factor,
        "min.insync.replicas": min_isr,
        "unclean.leader.election.enable": "false",
        "offsets.topic.num.partitions": 1,
        "offsets.topic.replication.factor": factor,
        "transaction.state.log.replication.factor": factor,
        "transaction.state.log.min.isr": min_isr,
        "transaction.state.log.num.partitions": 1,
        "share.coordinator.state.topic.replication.factor": factor,
        "share.coordinator.state.topic.min.isr": min_isr,
        "share.coordinator.state.topic.num.partitions": 1,
        "group.initial.rebalance.delay.ms": 0,
        "auto.create.topics.enable": "false",
        "log.cleaner.dedupe.buffer.size": 16 * 1024 * 1024,
        "log.cleaner.backoff.ms": 1000,
        "log.retention.check.interval.ms": 5000,
    }
    lines = ["# Written by infra.kafka_broker; regenerated on every `lk infra up`."]
    lines += [f"{key}={value}" for key, value in props.items()]
    return "\n".join(lines) + "\n"


def render_log4j(settings: Settings, node: int = NODE_ID) -> str:
    """A log4j2 configuration that writes a node's log to ``<its home>/logs/server.log``."""
    server_log = _paths(settings, node).server_log
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
    id_file = _cluster_id_file(settings)
    if id_file.exists():
        cluster_id = id_file.read_text().strip()
    else:
        cluster_id = new_cluster_id()
        id_file.write_text(cluster_id + "\n")
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


def _ready(address: str, brokers: int = 1) -> bool:
    """True once the node at ``address`` answers metadata and ``brokers`` are registered."""
    try:
        with _admin(address, timeout_ms=2_000) as admin:
            return len(admin.describe_cluster().get("brokers") or ()) >= brokers
    except Exception as err:  # any client error just means "not yet"
        log.debug("broker at %s not ready: %s", address, err)
        return False


def _wait_ready(
    settings: Settings, node: int, proc: subprocess.Popen[bytes] | None, brokers: int = 1
) -> None:
    paths = _paths(settings, node)
    deadline = time.monotonic() + settings.broker.start_timeout_s
    where = address(settings, node)
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            paths.pid.unlink(missing_ok=True)
            raise BrokerError(
                f"node {node} exited with code {proc.returncode} while starting:\n"
                f"{_log_tail(paths)}"
            )
        if _ready(where, brokers):
            return
        time.sleep(0.5)
    raise BrokerError(
        f"the broker at {where} did not answer within {settings.broker.start_timeout_s:.0f} s "
        f"(still running; `lk infra down` stops it):\n{_log_tail(paths)}"
    )


def _launch(settings: Settings, node: int) -> subprocess.Popen[bytes] | None:
    """Start one node unless it runs; None if it ran already."""
    paths = _paths(settings, node)
    if (pid := _read_pid(paths)) is not None:
        log.info("node %s already running (pid %s)", node, pid)
        return None
    for port in ports(settings, node):
        if _port_in_use(port):
            raise BrokerError(
                f"port {port} on {HOST} is in use by another process; stop it or set "
                f"broker.port / broker.controller_port (LK_BROKER__PORT) to free ports"
            )
    for folder in (paths.home, paths.data, paths.logs):
        folder.mkdir(parents=True, exist_ok=True)
    paths.properties.write_text(render_server_properties(settings, node))
    paths.log4j.write_text(render_log4j(settings, node))
    _format_storage(settings, paths)
    cmd = [*_java_base(settings, paths), "kafka.Kafka", str(paths.properties)]
    log.info("starting node %s on %s", node, address(settings, node))
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
    return proc


def up(settings: Settings) -> BrokerStatus:
    """Start every node that is not running, wait until all answer, and return the status.

    Raises:
        BrokerError: a port is taken by another process, formatting failed, or a node
            exited or did not answer within ``settings.broker.start_timeout_s``.
    """
    started = {node: _launch(settings, node) for node in nodes(settings)}
    for node, proc in started.items():
        _wait_ready(settings, node, proc, brokers=settings.broker.count)
    log.info("%d node(s) ready on %s", len(started), bootstrap(settings))
    return status(settings)


def start_node(settings: Settings, node: int) -> None:
    """(Re)start one node of the cluster and wait until it answers (chaos restarts)."""
    _wait_ready(settings, node, _launch(settings, node))


def kill_node(settings: Settings, node: int) -> int | None:
    """SIGKILL one node, as a crash would: no shutdown, no flush. Returns its PID."""
    paths = _paths(settings, node)
    pid = _read_pid(paths)
    if pid is None:
        return None
    log.warning("killing node %s (pid %s) with SIGKILL", node, pid)
    with suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    while _is_kafka_process(pid):
        time.sleep(0.05)
    paths.pid.unlink(missing_ok=True)
    # The main thread is a zombie before the JVM's last thread has closed its sockets:
    # wait until the ports are free again, so a restart can bind them.
    deadline = time.monotonic() + STOP_TIMEOUT_S
    while any(_port_in_use(p) for p in ports(settings, node)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return pid


def down(settings: Settings, timeout_s: float = STOP_TIMEOUT_S) -> bool:
    """Stop every node: SIGTERM all at once, then SIGKILL after ``timeout_s``. Fine if none runs.

    All at once, because the last node of a cluster stopped alone waits for a quorum that
    is gone. Nodes of a cluster started with another ``broker.count`` are found by folder.

    Returns:
        True if a running node was stopped.
    """
    home = settings.broker.home.resolve()
    homes = {_paths(settings, n).home for n in nodes(settings)} | {home}
    homes |= {p for p in home.glob("node-*") if p.is_dir()}
    running = {h: pid for h in sorted(homes) if (pid := _read_pid(_Paths(h))) is not None}
    for pid in running.values():
        log.info("stopping the broker (pid %s)", pid)
        with suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    while any(map(_is_kafka_process, running.values())) and time.monotonic() < deadline:
        time.sleep(0.2)
    for pid in running.values():
        if _is_kafka_process(pid):
            log.warning("broker (pid %s) ignored SIGTERM for %.0f s: killing it", pid, timeout_s)
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            while _is_kafka_process(pid):
                time.sleep(0.1)
    for folder in running:
        _Paths(folder).pid.unlink(missing_ok=True)
    return bool(running)


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
    """Whether the nodes run and, if any does, the topics with partitions, offsets, retention."""
    pids = {node: _read_pid(_paths(settings, node)) for node in nodes(settings)}
    alive = [node for node, pid in pids.items() if pid is not None]
    base: dict[str, Any] = {
        "pid": pids[alive[0]] if alive else None,
        "bootstrap": bootstrap(settings),
        "home": str(settings.broker.home.resolve()),
        "nodes": pids,
    }
    if not alive:
        return BrokerStatus(running=False, **base)
    where = ",".join(address(settings, node) for node in alive)
    try:
        with _admin(where) as admin:
            topics = _describe_topics(admin)
    except Exception as err:
        raise BrokerError(f"broker pid {base['pid']} runs but does not answer: {err}") from err
    return BrokerStatus(running=True, topics=topics, **base)
