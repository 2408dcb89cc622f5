"""The HTTP read API over a real batch run: the same rows as ``read_view``, from memory."""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import Decimal
from functools import reduce
from typing import Any

import pytest
from fastapi.testclient import TestClient
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from lake.source import ServingSource
from lk.storage import delta_version as table_version
from lk.wiring import build
from serving_layer.api import create_app
from serving_layer.refresh import Refresher
from serving_layer.snapshot import to_json_value
from tests.support.serving import read_served, source_of
from views import default_registry
from views.base import View
from views.registry import ViewRegistry

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def client(spark, served):
    app = create_app(build(served).refresher(spark=spark, interval=0.5))
    with TestClient(app) as client:
        assert app.state.refresher.wait_until_loaded(timeout=300)
        yield client


def rendered(frame: DataFrame) -> list[dict[str, Any]]:
    columns = frame.columns
    return [
        {c: to_json_value(v) for c, v in zip(columns, row, strict=True)} for row in frame.collect()
    ]


def where_equal(frame: DataFrame, values: dict[str, Any]) -> DataFrame:
    return frame.where(reduce(lambda a, b: a & b, [F.col(c) == v for c, v in values.items()]))


def as_param(value: Any) -> str:
    return str(to_json_value(value))


def test_health_names_mode_source_and_served_versions(spark, served, client):
    response = client.get("/health")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ok" and body["mode"] == "lambda" and body["error"] is None
    assert body["source"] == source_of(spark, served).description
    assert body["source"].startswith("batch run ")
    assert body["checked_at"].endswith("Z") and body["refresh_interval_s"] == 0.5
    for name in default_registry().names():
        view = body["views"][name]
        assert view["served"] and view["version"] == 0
        assert view["rows"] == read_served(spark, served, name).count()
        assert view["refreshed_at"].endswith("Z")


def test_views_lists_keys_and_presented_columns(spark, served, client):
    listed = client.get("/views").json()
    registry = default_registry()
    assert [v["name"] for v in listed] == registry.names()
    for info in listed:
        frame = read_served(spark, served, info["name"])
        assert info["key"] == list(registry.get(info["name"]).key)
        assert [c["name"] for c in info["columns"]] == frame.columns
        assert [c["type"] for c in info["columns"]] == [
            f.dataType.simpleString() for f in frame.schema.fields
        ]
        assert not any(c["name"].startswith("_") for c in info["columns"])


@pytest.mark.parametrize("name", default_registry().names())
def test_point_query_by_key_equals_read_served(spark, served, client, name):
    view = default_registry().get(name)
    frame = read_served(spark, served, name)
    rows = frame.collect()
    assert rows, f"{name} is empty in the test workload"
    for row in (rows[0], rows[len(rows) // 2], rows[-1]):
        key = {k: row[k] for k in view.key}
        response = client.get(f"/views/{name}", params={k: as_param(v) for k, v in key.items()})
        assert response.status_code == 200, response.text
        expected = rendered(where_equal(frame, key))
        assert response.json() == expected and len(expected) == 1
        assert response.headers["x-table-version"] == "0"
        assert response.headers["x-serving-source"].startswith("batch run ")
        assert response.headers["x-refreshed-at"].endswith("Z")


def test_whole_view_equals_read_view_in_order(spark, served, client):
    for name in default_registry().names():
        assert client.get(f"/views/{name}").json() == rendered(read_served(spark, served, name))


def test_partial_key_non_key_filters_and_limit(spark, served, client):
    carts = read_served(spark, served, "cart_state")
    user = carts.first()["user_id"]
    got = client.get("/views/cart_state", params={"user_id": str(user)}).json()
    assert got == rendered(carts.where(F.col("user_id") == user)) and got

    revenue = read_served(spark, served, "revenue_by_category")
    some = revenue.first()
    amount = some["revenue"]
    assert isinstance(amount, Decimal)
    got = client.get("/views/revenue_by_category", params={"revenue": str(amount)}).json()
    assert got == rendered(revenue.where(F.col("revenue") == amount))
    assert all(isinstance(r["revenue"], float) for r in got)

    books = client.get("/views/revenue_by_category?category=books&limit=3").json()
    assert books == rendered(revenue.where(F.col("category") == "books").limit(3))
    assert client.get("/views/revenue_by_category?category=books&limit=0").json() == []
    both = {"category": some["category"], "orders": some["orders"]}
    got = client.get("/views/revenue_by_category", params={k: str(v) for k, v in both.items()})
    assert got.json() == rendered(where_equal(revenue, both))


def test_timestamps_are_utc_z_and_filters_accept_any_iso_form(spark, served, client):
    frame = read_served(spark, served, "revenue_by_category")
    start: datetime = frame.first()["window_start"]
    expected = rendered(frame.where(F.col("window_start") == start))
    for text in (
        start.isoformat() + "Z",
        start.isoformat(timespec="milliseconds") + "Z",
        start.isoformat() + "+00:00",
        (start + timedelta(hours=2)).isoformat() + "+02:00",
    ):
        got = client.get("/views/revenue_by_category", params={"window_start": text}).json()
        assert got == expected, text
    assert all(r["window_start"].endswith(":00.000Z") for r in expected)


def test_unknown_view_is_404_and_bad_filters_are_400(client):
    response = client.get("/views/no_such_view")
    assert response.status_code == 404
    assert "no view named 'no_such_view'" in response.json()["detail"]
    assert "revenue_by_category" in response.json()["detail"]

    response = client.get("/views/cart_state?colour=red")
    assert response.status_code == 400
    assert "unknown column 'colour'" in response.json()["detail"]
    assert "user_id" in response.json()["detail"]
    for query in ("user_id=abc", "updated_at=yesterday", "limit=-1", "limit=x", "quantity=1.5"):
        response = client.get(f"/views/cart_state?{query}")
        assert response.status_code == 400, query
    assert client.get("/views/cart_state?user_id=1&user_id=2").status_code == 400
    assert client.get("/views/cart_state?user_id=999999").json() == []


def test_refresh_reloads_only_when_the_table_version_changes(spark, served, tmp_path):
    path = (tmp_path / "tiny").as_uri()
    schema = "id long, label string, amount decimal(10,2), at timestamp, _hidden int"
    first = [(1, "a", Decimal("1.50"), datetime(2026, 11, 1, 10, 0, 0, 250_000), 7)]
    spark.createDataFrame(first, schema).write.format("delta").save(path)
    assert table_version(spark, path) == 0
    assert table_version(spark, (tmp_path / "absent").as_uri()) is None

    tiny = View(
        name="tiny",
        key=("id",),
        compute=lambda events, ctx: events,
        merge=lambda state: state,
        merge_rule="test only",
        order_by=("id",),
    )
    refresher = Refresher(
        served,
        ViewRegistry([tiny]),
        lambda _: ServingSource("test", "tiny table", {"tiny": path}),
        spark=spark,
        interval=3600,
    )
    with TestClient(create_app(refresher)) as client:
        assert refresher.wait_until_loaded(timeout=120)
        response = client.get("/views/tiny")
        assert response.json() == [
            {"id": 1, "label": "a", "amount": 1.5, "at": "2026-11-01T10:00:00.250Z"}
        ]
        assert response.headers["x-table-version"] == "0"
        assert not refresher.refresh()

        second = [(2, "b", Decimal("2.25"), datetime(2026, 11, 1, 11, 0), 8)]
        spark.createDataFrame(second, schema).write.format("delta").mode("append").save(path)
        assert table_version(spark, path) == 1
        assert refresher.refresh()
        response = client.get("/views/tiny", params={"id": "2"})
        assert response.json() == [
            {"id": 2, "label": "b", "amount": 2.25, "at": "2026-11-01T11:00:00.000Z"}
        ]
        assert response.headers["x-table-version"] == "1"
        assert client.get("/health").json()["views"]["tiny"]["rows"] == 2
        assert client.get("/views/tiny?_hidden=7").status_code == 400
