"""One small workload and one batch run, shared by the serving-layer test modules."""

from __future__ import annotations

import pytest

from config.settings import Settings
from workload.generator import WorkloadSpec

SPEC = WorkloadSpec(events=2_000, users=40, products=20, seed=23)


@pytest.fixture(scope="package")
def served(spark, kafka_settings) -> Settings:
    """Settings whose storage holds one published batch run over ``SPEC``."""
    from batch_layer.job import run_batch
    from designs.platform import build
    from tests.conftest import fresh_topics
    from tests.support.kafka import produce_spec

    settings = fresh_topics(kafka_settings)
    produce_spec(settings, SPEC)
    result = run_batch(spark, settings, build(settings).registry)
    assert not result.skipped and result.run.status == "published"
    return settings


@pytest.fixture(scope="package")
def client(spark, served):
    """The read API over ``served``, its views loaded (its refresher runs for the package)."""
    from fastapi.testclient import TestClient

    from designs.platform import build
    from serving_layer.api import create_app

    app = create_app(build(served).refresher(spark=spark, interval=0.5))
    with TestClient(app) as client:
        assert app.state.refresher.wait_until_loaded(timeout=300)
        yield client
