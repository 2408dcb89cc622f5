"""Shared fixtures: one typed Settings, one SparkSession and one Kafka broker per test session."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from config.settings import Settings, load_settings, with_sections

REPO = Path(__file__).resolve().parents[1]
#: the markers ``make test``, ``make scenarios`` and ``make cluster`` select on: a test with
#: none runs nowhere
KINDS = ("unit", "integration", "chaos", "scenario", "cluster")
EXIT_STATUS = pytest.StashKey[int]()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Refuse a test that carries none of :data:`KINDS`: no command would ever run it."""
    unmarked = [item.nodeid for item in items if not any(item.get_closest_marker(k) for k in KINDS)]
    if unmarked:
        raise pytest.UsageError(f"tests without one of the markers {KINDS}: {unmarked}")


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Remember the session's exit status for :func:`pytest_unconfigure`."""
    session.config.stash[EXIT_STATUS] = int(exitstatus)


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    """End the process once pytest has written its report, with pytest's exit status.

    After the session's JVM has stopped, Python's own shutdown still runs py4j's
    finalizers and the exit hooks of Kafka clients, Airflow and Great Expectations
    against connections that are gone. On CI that shutdown once hung for the better part
    of an hour after every test had passed. Nothing is left to write by then: the tests'
    brokers, clusters and processes were stopped by their fixtures.
    """
    status = config.stash.get(EXIT_STATUS, None)
    if status is None:
        return
    others = [
        t.name for t in threading.enumerate() if not t.daemon and t is not threading.main_thread()
    ]
    if others:
        print(f"threads still running at exit: {others}", file=sys.stderr)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


@pytest.fixture(scope="session")
def base_settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    """Settings for the test session: storage under a temp dir, jars from the repo cache."""
    root = tmp_path_factory.mktemp("lk")
    return load_settings(
        storage={"root": str(root / "data")},
        spark={
            "shuffle_partitions": 2,
            "jars_dir": str(REPO / ".lk/jars/spark"),
            "class_archive_dir": str(REPO / ".lk/cds"),
            "log_dir": str(root / "logs"),
            "conf": {"spark.sql.streaming.minBatchesToRetain": "5"},
        },
        broker={"jars_dir": str(REPO / ".lk/jars/kafka"), "home": str(root / "kafka")},
    )


@pytest.fixture(scope="session")
def spark(base_settings: Settings) -> Iterator:
    """One local[2] SparkSession with Delta for the whole test session (UI off)."""
    from lake.spark import build_session

    session = build_session(base_settings, app_name="lk-tests")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def kafka_settings(
    base_settings: Settings, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Settings]:
    """One real KRaft broker for the test session, on two free ports and a temp home."""
    from infra.local import local_broker

    with local_broker(base_settings, tmp_path_factory.mktemp("kafka-broker")) as settings:
        yield settings


def fresh_topics(kafka_settings: Settings, **kafka: object) -> Settings:
    """Settings with unique topics (created) and storage root on the session broker."""
    from uuid import uuid4

    from event_log.topics import ensure_topics

    suffix = uuid4().hex[:10]
    fields = {
        "events_topic": f"events_{suffix}",
        "catalog_topic": f"catalog_{suffix}",
        "alerts_topic": f"alerts_{suffix}",
    }
    settings = with_sections(
        kafka_settings,
        kafka={**fields, **kafka},
        storage={"root": f"{kafka_settings.storage.root}/{suffix}"},
    )
    ensure_topics(settings)
    return settings


@pytest.fixture
def make_topic_settings(kafka_settings: Settings) -> Callable[..., Settings]:
    """Factory: ``fresh_topics`` on the session broker; kwargs override ``kafka`` fields."""

    def make(**kafka: object) -> Settings:
        return fresh_topics(kafka_settings, **kafka)

    return make


@pytest.fixture
def topic_settings(make_topic_settings: Callable[..., Settings]) -> Settings:
    """Settings with this test's own events/catalog topics (created) on the session broker."""
    return make_topic_settings()
