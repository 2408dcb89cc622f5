from __future__ import annotations

from pathlib import Path

import pytest

from config.settings import load_settings
from infra.kafka_broker import new_cluster_id, render_log4j, render_server_properties

pytestmark = pytest.mark.unit


def _parse(text: str) -> dict[str, str]:
    pairs = (line.split("=", 1) for line in text.splitlines() if line and not line.startswith("#"))
    return {key.strip(): value.strip() for key, value in pairs}


def test_server_properties_render_a_small_combined_kraft_node(tmp_path: Path) -> None:
    settings = load_settings(
        broker={"home": str(tmp_path), "port": 29092, "controller_port": 29093}
    )
    props = _parse(render_server_properties(settings))

    assert props["process.roles"] == "broker,controller"
    assert props["controller.quorum.voters"] == "1@127.0.0.1:29093"
    assert props["listeners"] == "PLAINTEXT://127.0.0.1:29092,CONTROLLER://127.0.0.1:29093"
    assert props["advertised.listeners"] == "PLAINTEXT://127.0.0.1:29092"
    assert props["controller.listener.names"] == "CONTROLLER"
    assert props["log.dirs"] == str(tmp_path.resolve() / "data")
    assert props["auto.create.topics.enable"] == "false"
    assert props["num.network.threads"] == props["num.io.threads"] == "2"
    assert props["offsets.topic.num.partitions"] == "1"
    assert props["group.initial.rebalance.delay.ms"] == "0"
    assert props["log.cleaner.dedupe.buffer.size"] == str(16 * 1024 * 1024)
    one_replica = [k for k in props if k.endswith((".replication.factor", ".min.isr"))]
    assert {
        "offsets.topic.replication.factor",
        "transaction.state.log.replication.factor",
        "transaction.state.log.min.isr",
        "share.coordinator.state.topic.replication.factor",
        "share.coordinator.state.topic.min.isr",
    } <= set(one_replica)
    assert all(props[k] == "1" for k in one_replica)
    assert "controller.quorum.bootstrap.servers" not in props  # static quorum only


def test_log4j_writes_to_a_file_under_the_broker_home(tmp_path: Path) -> None:
    settings = load_settings(broker={"home": str(tmp_path)})
    text = render_log4j(settings)
    assert f"fileName = {tmp_path.resolve() / 'logs' / 'server.log'}" in text
    assert "Console" not in text


def test_cluster_ids_look_like_kafka_uuids() -> None:
    ids = {new_cluster_id() for _ in range(50)}
    assert len(ids) == 50
    assert all(len(i) == 22 and not i.startswith("-") and "=" not in i for i in ids)
