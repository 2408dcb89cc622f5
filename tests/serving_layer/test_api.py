"""The HTTP read API over a real batch run: the same rows as ``read_view``, from memory."""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from fastapi.testclient import TestClient

from lake.pools import LIVE
from lake.source import ServingSource, StateTable
from lake.storage import delta_version as table_version
from oracle import consume_all
from serving_layer.api import create_app
from serving_layer.refresh import Refresher
from tests.support.pools import last_stage, stage_pools
from tests.support.serving import passthrough_view, source_of
from tests.support.workload import APPROX, oracle_views
from views import default_registry
from views.registry import ViewRegistry

pytestmark = pytest.mark.integration


#: Presented columns per view, from the contract (docs/semantics.md, "Views").
COLUMNS = {
    "revenue_by_category": ["window_start", "window_end", "category", "orders", "revenue"],
    "events_by_type": [
        "window_start", "window_end", "event_type", "events", "distinct_users",
        "distinct_users_approx",
    ],
    "user_sessions": [
        "user_id", "session_start", "session_end", "events", "purchases", "revenue",
    ],
    "conversions": ["window_start", "window_end", "purchases", "converted"],
    "cart_state": ["user_id", "product_id", "quantity", "updated_at"],
    "purchase_bursts": ["user_id", "burst_at", "window_start", "purchases"],
    "corrected_purchases": ["window_start", "window_end", "purchases"],
    "cart_value_by_product": ["product_id", "category", "price", "in_carts", "cart_value"],
}  # fmt: skip
ORDER = {
    "revenue_by_category": ("window_start", "category"),
    "events_by_type": ("window_start", "event_type"),
    "user_sessions": ("user_id", "session_start"),
    "conversions": ("window_start",),
    "cart_state": ("user_id", "product_id"),
    "purchase_bursts": ("user_id", "burst_at"),
    "corrected_purchases": ("window_start",),
    "cart_value_by_product": ("product_id",),
}


@pytest.fixture(scope="module")
def oracle_rows(served) -> dict[str, list[dict[str, Any]]]:
    """The oracle's rows of every view as JSON, in the view's key order (one run serves all)."""
    events = consume_all(served, served.kafka.events_topic)
    catalog = consume_all(served, served.kafka.catalog_topic)
    views = oracle_views(events, catalog, served.views)
    return {
        name: sorted(
            ({c: _json(v) for c, v in row.items()} for row in rows),
            key=lambda r, name=name: tuple(r[c] for c in ORDER[name]),
        )
        for name, rows in views.items()
    }


def _json(value: Any) -> Any:
    """How the API promises to write a value: UTC ``...sss``Z timestamps, decimals as numbers."""
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}Z"
    if isinstance(value, Decimal):
        return float(value)
    return value


def exact(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows without the HyperLogLog estimate (checked apart, within 5%)."""
    for row in rows:
        if APPROX in row:
            assert abs(row[APPROX] - row["distinct_users"]) <= 0.05 * row["distinct_users"]
    return [{c: v for c, v in row.items() if c != APPROX} for row in rows]


def test_health_names_mode_source_and_served_versions(spark, served, client, oracle_rows):
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
        assert view["rows"] == len(oracle_rows[name])
        assert view["refreshed_at"].endswith("Z")


def test_views_lists_keys_and_presented_columns(client):
    listed = client.get("/views").json()
    assert [v["name"] for v in listed] == list(COLUMNS)
    for info in listed:
        assert info["key"] == list(ORDER[info["name"]])
        assert [c["name"] for c in info["columns"]] == COLUMNS[info["name"]]
        assert all(c["type"] for c in info["columns"])


@pytest.mark.parametrize("name", list(COLUMNS))
def test_point_query_by_key_gives_the_oracles_row(client, oracle_rows, name):
    rows = oracle_rows[name]
    assert rows, f"{name} is empty in the test workload"
    for row in (rows[0], rows[len(rows) // 2], rows[-1]):
        key = {k: row[k] for k in ORDER[name]}
        response = client.get(f"/views/{name}", params={k: str(v) for k, v in key.items()})
        assert response.status_code == 200, response.text
        assert exact(response.json()) == exact([row])
        assert response.headers["x-table-version"] == "0"
        assert response.headers["x-serving-source"].startswith("batch run ")
        assert response.headers["x-refreshed-at"].endswith("Z")


def test_whole_view_is_the_oracles_in_key_order(client, oracle_rows):
    for name in COLUMNS:
        assert exact(client.get(f"/views/{name}").json()) == exact(oracle_rows[name]), name


def test_partial_key_non_key_filters_and_limit(client, oracle_rows):
    carts = oracle_rows["cart_state"]
    user = carts[0]["user_id"]
    got = client.get("/views/cart_state", params={"user_id": str(user)}).json()
    assert got == [r for r in carts if r["user_id"] == user] and got

    revenue = oracle_rows["revenue_by_category"]
    some = revenue[len(revenue) // 2]
    got = client.get("/views/revenue_by_category", params={"revenue": str(some["revenue"])})
    assert got.json() == [r for r in revenue if r["revenue"] == some["revenue"]]
    assert all(isinstance(r["revenue"], float) for r in got.json())

    books = client.get("/views/revenue_by_category?category=books&limit=3").json()
    assert books == [r for r in revenue if r["category"] == "books"][:3] and books
    assert client.get("/views/revenue_by_category?category=books&limit=0").json() == []
    both = {"category": some["category"], "orders": some["orders"]}
    got = client.get("/views/revenue_by_category", params={k: str(v) for k, v in both.items()})
    assert got.json() == [r for r in revenue if r["category"] == both["category"]
                          and r["orders"] == both["orders"]]  # fmt: skip


def test_timestamps_are_utc_z_and_filters_accept_any_iso_form(client, oracle_rows):
    revenue = oracle_rows["revenue_by_category"]
    text = revenue[0]["window_start"]
    expected = [r for r in revenue if r["window_start"] == text]
    start = datetime.fromisoformat(text.removesuffix("Z"))
    for form in (
        start.isoformat() + "Z",
        start.isoformat(timespec="milliseconds") + "Z",
        start.isoformat() + "+00:00",
        (start + timedelta(hours=2)).isoformat() + "+02:00",
    ):
        got = client.get("/views/revenue_by_category", params={"window_start": form}).json()
        assert got == expected, form
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


def _tiny_refresher(spark, settings, path: str) -> Refresher:
    """A refresher serving the Delta table at ``path`` as view ``tiny``.

    Its thread refreshes once at start, then only when woken (or when a test calls
    ``refresh``).
    """
    return Refresher(
        settings,
        ViewRegistry([passthrough_view("tiny", order_by=("id",))]),
        lambda _: ServingSource("tiny table", {"tiny": StateTable(path)}),
        spark=spark,
        interval=3600,
    )


def test_refresh_reloads_only_when_the_table_version_changes(spark, served, tmp_path):
    path = (tmp_path / "tiny").as_uri()
    schema = "id long, label string, amount decimal(10,2), at timestamp, _hidden int"
    first = [(1, "a", Decimal("1.50"), datetime(2026, 11, 1, 10, 0, 0, 250_000), 7)]
    spark.createDataFrame(first, schema).write.format("delta").save(path)
    assert table_version(spark, path) == 0
    assert table_version(spark, (tmp_path / "absent").as_uri()) is None

    refresher = _tiny_refresher(spark, served, path)
    with TestClient(create_app(refresher)) as client:
        assert refresher.wait_until_loaded(timeout=120)
        response = client.get("/views/tiny")
        assert response.json() == [
            {"id": 1, "label": "a", "amount": 1.5, "at": "2026-11-01T10:00:00.250Z"}
        ]
        assert response.headers["x-table-version"] == "0"
        tag = response.headers["etag"]
        unchanged = client.get("/views/tiny", headers={"If-None-Match": tag})
        assert (unchanged.status_code, unchanged.content) == (304, b"")
        assert unchanged.headers["etag"] == tag
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
        moved = client.get("/views/tiny", headers={"If-None-Match": f'W/{tag}, "other"'})
        assert moved.status_code == 200, "a newer version is served: the whole answer"
        assert [row["id"] for row in moved.json()] == [1, 2]
        assert moved.headers["etag"] not in (tag, "")
        assert client.get("/health").json()["views"]["tiny"]["rows"] == 2
        assert client.get("/views/tiny?_hidden=7").status_code == 400


def test_the_refresher_runs_its_reloads_in_the_live_pool(spark, served, tmp_path):
    path = (tmp_path / "pooled").as_uri()
    spark.createDataFrame([(1, "a")], "id long, label string").write.format("delta").save(path)
    before = last_stage(spark)
    refresher = _tiny_refresher(spark, served, path)
    refresher.start()
    try:
        assert refresher.wait_until_loaded(timeout=120)
    finally:
        refresher.stop()
    assert stage_pools(spark, before) == {LIVE}


def test_an_idle_view_is_reloaded_by_the_request_that_finds_it_behind(spark, served, tmp_path):
    path = (tmp_path / "idle").as_uri()
    spark.createDataFrame([(1, "a")], "id long, label string").write.format("delta").save(path)
    settings = served.model_copy(
        update={"serving": served.serving.model_copy(update={"idle_after": timedelta(minutes=1)})}
    )
    refresher = _tiny_refresher(spark, settings, path)

    def append(row: tuple[int, str]) -> None:
        spark.createDataFrame([row], "id long, label string").write.format("delta").mode(
            "append"
        ).save(path)

    with TestClient(create_app(refresher)) as client:
        assert refresher.wait_until_loaded(timeout=120)
        append((2, "b"))
        assert not refresher.refresh()  # nobody asked for it yet: not reloaded
        assert refresher.state.behind == {"tiny"}
        assert client.get("/health").json()["views"]["tiny"]["behind"] is True

        response = client.get("/views/tiny")  # wakes the refresher and waits for it
        assert response.headers["x-table-version"] == "1"
        assert [row["id"] for row in response.json()] == [1, 2]

        append((3, "c"))
        assert refresher.refresh()  # asked a moment ago: reloaded as its table moves
        assert refresher.state.behind == frozenset()
        assert client.get("/views/tiny", params={"id": "3"}).json() == [{"id": 3, "label": "c"}]


def test_an_idle_view_the_source_moves_to_another_table_waits_for_a_request(
    spark, served, tmp_path
):
    """A handoff (a Lambda lane's new epoch, a Kappa switch) moves every view at once."""
    old, new = (tmp_path / "old").as_uri(), (tmp_path / "new").as_uri()
    spark.createDataFrame([(1, "a")], "id long, label string").write.format("delta").save(old)
    spark.createDataFrame([(2, "b")], "id long, label string").write.format("delta").save(new)
    settings = served.model_copy(
        update={"serving": served.serving.model_copy(update={"idle_after": timedelta(minutes=1)})}
    )
    source = {"path": old}
    refresher = Refresher(
        settings,
        ViewRegistry([passthrough_view("tiny", order_by=("id",))]),
        lambda _: ServingSource("tiny table", {"tiny": StateTable(source["path"])}),
        spark=spark,
        interval=3600,
    )
    with TestClient(create_app(refresher)) as client:
        assert refresher.wait_until_loaded(timeout=120)
        source["path"] = new
        assert not refresher.refresh()  # nobody asked for it: the old table's rows stay
        assert refresher.state.behind == {"tiny"}
        assert refresher.state.views["tiny"].table == StateTable(old)

        response = client.get("/views/tiny")  # wakes the refresher and waits for it
        assert response.json() == [{"id": 2, "label": "b"}]
        assert refresher.state.views["tiny"].table == StateTable(new)
        assert refresher.state.behind == frozenset()
