"""``lk query`` answers from a running ``lk serve`` without a Spark session of its own."""

from __future__ import annotations

import threading

import orjson
import pytest
import uvicorn
from typer.testing import CliRunner

from designs.platform import build
from infra.local import free_ports
from lk import detached
from lk.cli.app import app
from oracle import consume_all
from serving_layer.api import create_app
from tests.support.workload import oracle_views

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def server(spark, served, tmp_path_factory):
    """The read API on a real socket, registered as the background ``lk serve``."""
    port = free_ports(1)[0]
    settings = served.model_copy(
        update={
            "serving": served.serving.model_copy(update={"port": port}),
            "watchdog": served.watchdog.model_copy(update={"home": tmp_path_factory.mktemp("run")}),
        }
    )
    api = create_app(build(settings).refresher(spark=spark, interval=0.5))
    web = uvicorn.Server(uvicorn.Config(api, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=web.run, daemon=True)
    thread.start()
    assert api.state.refresher.wait_until_loaded(timeout=300)
    with detached.claim(settings, detached.SERVE_PROCESS):
        yield settings
    web.should_exit = True
    thread.join(timeout=30)


@pytest.fixture
def cli(server, monkeypatch):
    """Run ``lk`` with the server's settings; starting Spark would fail the test."""
    env = {
        "LK_KAFKA__BOOTSTRAP_SERVERS": server.kafka.bootstrap_servers,
        "LK_KAFKA__EVENTS_TOPIC": server.kafka.events_topic,
        "LK_KAFKA__CATALOG_TOPIC": server.kafka.catalog_topic,
        "LK_STORAGE__ROOT": str(server.storage.root),
        "LK_SERVING__PORT": str(server.serving.port),
        "LK_WATCHDOG__HOME": str(server.watchdog.home),
    }

    def no_spark(*_, **__):
        raise AssertionError("lk query started Spark although lk serve runs")

    monkeypatch.setattr("lake.spark.build_session", no_spark)
    runner = CliRunner()
    return lambda *args: runner.invoke(app, list(args), env=env)


def test_query_answers_from_the_server_with_the_oracles_rows(cli, server):
    events = consume_all(server, server.kafka.events_topic)
    catalog = consume_all(server, server.kafka.catalog_topic)
    carts = oracle_views(events, catalog, server.views)["cart_state"]
    user = carts[0]["user_id"]
    expected = sorted((r["product_id"], r["quantity"]) for r in carts if r["user_id"] == user)

    result = cli("query", "cart_state", "--filter", f"user_id={user}", "--format", "json")

    assert result.exit_code == 0, result.output
    rows = [orjson.loads(line) for line in result.stdout.splitlines()]
    assert sorted((r["product_id"], r["quantity"]) for r in rows) == expected
    assert {r["user_id"] for r in rows} == {user}


def test_query_names_the_servers_error_for_a_bad_request(cli):
    unknown = cli("query", "no_such_view")
    assert unknown.exit_code == 1
    assert "no_such_view" in unknown.output

    column = cli("query", "cart_state", "--filter", "colour=red")
    assert column.exit_code == 1
    assert "unknown column 'colour'" in column.output


def test_csv_of_an_empty_answer_still_has_its_header(cli):
    result = cli("query", "cart_state", "--filter", "user_id=-1", "--format", "csv")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == ["user_id,product_id,quantity,updated_at"]
