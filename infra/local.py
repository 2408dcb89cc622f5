"""A broker of one's own on loopback, on free ports: what tests, benchmarks and demos share."""

from __future__ import annotations

import random
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from config.settings import Settings, with_sections
from infra import kafka_broker


def free_ports(count: int) -> list[int]:
    """``count`` distinct TCP ports on 127.0.0.1 that nothing listens on right now."""
    ports: set[int] = set()
    while len(ports) < count:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind(("127.0.0.1", 0))
            ports.add(sock.getsockname()[1])
    return sorted(ports)


def free_run(
    count: int, low: int = 20_000, high: int = 30_000, offsets: tuple[int, ...] = (0,)
) -> int:
    """A port ``p`` with ``p + k + o`` free for every ``k < count`` and ``o`` in ``offsets``.

    SeaweedFS's gRPC ports are its HTTP ports + 10000: ``offsets=(0, 10_000)``.
    """
    while True:
        base = random.randrange(low, high - count)
        if all(port_free(base + k + o) for k in range(count) for o in offsets):
            return base


def cluster_settings(settings: Settings, count: int) -> Settings:
    """``settings`` for a local cluster of ``count`` nodes.

    The bootstrap list names every node; topics get its replication factor and
    ``min.insync.replicas`` (3 and 2 from three nodes on).
    """
    sized = with_sections(settings, broker={"count": count})
    factor, min_isr = kafka_broker.replication(sized)
    return with_sections(
        sized,
        kafka={
            "bootstrap_servers": kafka_broker.bootstrap(sized),
            "replication_factor": factor,
            "min_insync_replicas": min_isr,
        },
    )


def _free_strided(count: int) -> tuple[int, int]:
    """Two base ports such that ``base + 2k`` is free for every node ``k < count``.

    They are drawn below the kernel's ephemeral range: a client that keeps reconnecting
    to a killed node's ephemeral-range port can be handed that very port as its own
    source port (a TCP self-connect), and the node could not bind it again on restart.
    """
    low = _ephemeral_low()
    while True:
        port, controller = random.sample(range(low // 2, low - 2 * count * PORT_GAP), 2)
        wanted = [
            b + kafka_broker.PORT_STRIDE * k for b in (port, controller) for k in range(count)
        ]
        if len(set(wanted)) == len(wanted) and all(port_free(p) for p in wanted):
            return port, controller


PORT_GAP = 2


def _ephemeral_low() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def port_free(port: int) -> bool:
    """Whether ``port`` can be bound on 127.0.0.1 right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


@contextmanager
def local_broker(settings: Settings, home: Path, count: int = 1) -> Iterator[Settings]:
    """A KRaft broker (``count`` nodes) on free ports under ``home``; ``settings`` pointed at it.

    Every node is stopped on exit, whatever happened inside.
    """
    port, controller = _free_strided(count)
    mine = cluster_settings(
        with_sections(settings, broker={"port": port, "controller_port": controller, "home": home}),
        count,
    )
    kafka_broker.up(mine)
    try:
        yield mine
    finally:
        kafka_broker.down(mine)
