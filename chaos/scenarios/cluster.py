"""A three-node KRaft cluster, one node SIGKILLed under ``lk produce`` at full rate.

Replication factor 3 and ``min.insync.replicas=2``: zero acknowledged records may be
lost, and every record is counted back from the topics one by one.
"""

from __future__ import annotations

import random
from uuid import uuid4

from chaos.bench import Bench
from chaos.results import Outcome
from chaos.scenarios.broker import produce_through
from config.settings import Settings, with_sections
from event_log.topics import ensure_topics
from infra import kafka_broker
from infra.local import local_broker

NAME = "cluster_node_kill"


def _kill_one(settings: Settings, rng: random.Random) -> str:
    node = rng.choice(kafka_broker.nodes(settings))
    pid = kafka_broker.kill_node(settings, node)
    return f"node {node} (pid {pid}) of 3 killed, left down"


def run(bench: Bench, seed: int) -> Outcome:
    """Start a cluster of three, produce through a node kill, count back, stop the cluster."""
    home = bench.folder / f"cluster-{seed}-{uuid4().hex[:6]}"
    with local_broker(bench.settings, home, count=3) as cluster:
        suffix = uuid4().hex[:10]
        settings = with_sections(
            cluster,
            kafka={"events_topic": f"events_{suffix}", "catalog_topic": f"catalog_{suffix}"},
        )
        ensure_topics(settings)
        outcome = produce_through(bench, settings, seed, _kill_one, NAME)
    outcome.notes.insert(
        0,
        f"RF {settings.kafka.replication_factor}, "
        f"min.insync.replicas {settings.kafka.min_insync_replicas}",
    )
    return outcome
