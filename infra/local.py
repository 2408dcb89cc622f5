"""A broker of one's own on loopback, on free ports: what tests, benchmarks and demos share."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from infra import kafka_broker
from lk.config import Settings, with_sections


def free_ports(count: int) -> list[int]:
    """``count`` distinct TCP ports on 127.0.0.1 that nothing listens on right now."""
    ports: set[int] = set()
    while len(ports) < count:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind(("127.0.0.1", 0))
            ports.add(sock.getsockname()[1])
    return sorted(ports)


@contextmanager
def local_broker(settings: Settings, home: Path) -> Iterator[Settings]:
    """A single-node KRaft broker on free ports under ``home``; ``settings`` pointed at it.

    The broker is stopped on exit, whatever happened inside.
    """
    port, controller = free_ports(2)
    mine = with_sections(
        settings,
        broker={"port": port, "controller_port": controller, "home": home},
        kafka={"bootstrap_servers": f"127.0.0.1:{port}"},
    )
    kafka_broker.up(mine)
    try:
        yield mine
    finally:
        kafka_broker.down(mine)
