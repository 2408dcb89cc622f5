"""Quality checks: spec -> GX suite -> validated Spark DataFrame -> report / QualityError."""

from __future__ import annotations

import pickle
from dataclasses import replace
from datetime import datetime, timedelta
from decimal import Decimal

import pytest

from quality import (
    CheckFailure,
    CheckReport,
    QualityError,
    TableChecks,
    build_suite,
    require,
    run_checks,
)
from quality import checks as checks_module

pytestmark = pytest.mark.integration

SCHEMA = "order_id string, line int, ts timestamp, category string, amount decimal(18,2), qty long"
T0 = datetime(2026, 11, 1, 10, 0)
ROWS = [
    ("o1", 1, T0, "books", Decimal("10.50"), 1),
    ("o1", 2, T0, "games", Decimal("5.25"), 2),
    ("o2", 1, T0 + timedelta(seconds=1), "books", Decimal("0.00"), 0),
    ("o3", 1, T0 + timedelta(milliseconds=1), "toys", Decimal("100.00"), 3),
]
CHECKS = TableChecks(
    table="order_lines",
    not_null=("order_id", "line", "ts", "amount"),
    unique_key=("order_id", "line"),
    non_negative=("amount", "qty"),
    column_sums={"amount": Decimal("115.75"), "qty": 6},
    row_count=4,
    allowed_values={"category": ("books", "games", "toys")},
)


@pytest.fixture(scope="module")
def make_df(spark):
    def make(rows=ROWS, schema=SCHEMA):
        return spark.createDataFrame(rows, schema)

    return make


def only_failure(report: CheckReport) -> CheckFailure:
    assert not report.success
    assert len(report.failures) == 1, report.summary()
    return report.failures[0]


def assert_raises_naming(report: CheckReport, expectation: str, column: str | None) -> None:
    with pytest.raises(QualityError) as err:
        require([report])
    message = str(err.value)
    assert f"{report.table}: {expectation}" in message
    if column is not None:
        assert f"{expectation}({column})" in message
    assert err.value.reports == [report]


def test_build_suite_maps_every_spec_item() -> None:
    suite = build_suite(CHECKS)
    types = [e.expectation_type for e in suite.expectations]
    assert types == [
        *["expect_column_values_to_not_be_null"] * 4,
        "expect_compound_columns_to_be_unique",
        *["expect_column_values_to_be_between"] * 2,
        *["expect_column_sum_to_be_between"] * 2,
        "expect_table_row_count_to_equal",
        "expect_column_values_to_be_in_set",
    ]
    single = build_suite(TableChecks(table="t", unique_key=("id",)))
    assert [e.expectation_type for e in single.expectations] == [
        "expect_column_values_to_be_unique"
    ]


def test_table_checks_normalises_and_validates() -> None:
    values = {"c": ["x"]}
    checks = TableChecks(table="t", not_null=["a"], allowed_values=values)
    assert checks.not_null == ("a",)
    assert checks.allowed_values["c"] == ("x",)
    values["d"] = ["y"]  # the spec keeps its own copy
    assert "d" not in checks.allowed_values
    assert pickle.loads(pickle.dumps(CHECKS)) == CHECKS
    assert hash(checks) == hash(TableChecks(table="t", not_null=("a",)))
    with pytest.raises(TypeError):
        TableChecks(table="t", not_null="a")
    with pytest.raises(TypeError):
        TableChecks(table="t", column_sums={"a": 1.5})
    with pytest.raises(ValueError):
        TableChecks(table="t", row_count=-1)


def test_clean_dataframe_passes(make_df) -> None:
    report = run_checks(make_df(), CHECKS)
    assert report.success, report.summary()
    assert report.failures == ()
    assert report.evaluated == 11
    assert report.summary() == "order_lines: all 11 expectations passed"
    require([report, report])  # no raise


def test_null_key_fails(make_df) -> None:
    rows = [*ROWS[:3], (None, 1, T0, "toys", Decimal("100.00"), 3)]
    report = run_checks(make_df(rows), CHECKS)
    failure = only_failure(report)
    assert failure == CheckFailure(
        "expect_column_values_to_not_be_null", "order_id", "1 unexpected of 4 rows (25.00%)"
    )
    assert report.summary() == f"order_lines: {failure.describe()}"
    assert_raises_naming(report, "expect_column_values_to_not_be_null", "order_id")


def test_duplicate_compound_key_fails(make_df) -> None:
    rows = [*ROWS[:3], ("o1", 2, T0, "toys", Decimal("100.00"), 3)]
    failure = only_failure(report := run_checks(make_df(rows), CHECKS))
    assert failure.expectation == "expect_compound_columns_to_be_unique"
    assert failure.column == "order_id, line"
    assert failure.details.startswith("2 unexpected of 4 rows")
    assert failure.details.endswith("e.g. (order_id='o1', line=2), (order_id='o1', line=2)")
    assert_raises_naming(report, "expect_compound_columns_to_be_unique", "order_id, line")


def test_negative_amount_fails(make_df) -> None:
    rows = [*ROWS[:3], ("o3", 1, T0, "toys", Decimal("-1.00"), 3)]
    checks = TableChecks(table="order_lines", non_negative=("amount", "qty"))
    failure = only_failure(report := run_checks(make_df(rows), checks))
    assert failure.expectation == "expect_column_values_to_be_between"
    assert failure.column == "amount"
    assert failure.details == "1 unexpected of 4 rows (25.00%), e.g. -1.00"
    assert_raises_naming(report, "expect_column_values_to_be_between", "amount")


def test_wrong_column_sum_fails(make_df) -> None:
    checks = TableChecks(table="order_lines", column_sums={"amount": Decimal("115.74"), "qty": 6})
    failure = only_failure(report := run_checks(make_df(), checks))
    assert failure.expectation == "expect_column_sum_to_be_between"
    assert failure.column == "amount"
    assert failure.details == "observed sum 115.75, expected 115.74"
    assert_raises_naming(report, "expect_column_sum_to_be_between", "amount")


def test_wrong_integer_sum_fails(make_df) -> None:
    checks = TableChecks(table="order_lines", column_sums={"qty": 7})
    failure = only_failure(run_checks(make_df(), checks))
    assert failure.details == "observed sum 6, expected 7"


def test_decimal_sums_are_exact_at_cent_resolution(make_df) -> None:
    big = Decimal("12345678901.23")  # ~1.2e10: a large daily revenue, cents must still count
    rows = [("o1", 1, T0, "books", big, 1), ("o2", 1, T0, "books", Decimal("0.01"), 1)]
    df = make_df(rows)
    assert df.schema["amount"].dataType.simpleString() == "decimal(18,2)"
    ok = TableChecks(table="big", column_sums={"amount": Decimal("12345678901.24")})
    off_by_a_cent = TableChecks(table="big", column_sums={"amount": Decimal("12345678901.25")})
    assert run_checks(df, ok).success
    failure = only_failure(run_checks(df, off_by_a_cent))
    assert failure.details == "observed sum 12345678901.24, expected 12345678901.25"


def test_wrong_row_count_fails(make_df) -> None:
    checks = TableChecks(table="order_lines", row_count=5)
    failure = only_failure(report := run_checks(make_df(), checks))
    assert failure == CheckFailure(
        "expect_table_row_count_to_equal", None, "observed 4 rows, expected 5"
    )
    assert_raises_naming(report, "expect_table_row_count_to_equal", None)


def test_value_outside_set_fails(make_df) -> None:
    rows = [*ROWS[:3], ("o3", 1, T0, "garden", Decimal("100.00"), 3)]
    failure = only_failure(report := run_checks(make_df(rows), CHECKS))
    assert failure.expectation == "expect_column_values_to_be_in_set"
    assert failure.column == "category"
    assert failure.details == "1 unexpected of 4 rows (25.00%), e.g. 'garden'"
    assert_raises_naming(report, "expect_column_values_to_be_in_set", "category")


def test_timestamp_key_columns(make_df) -> None:
    by_ts = TableChecks(table="by_ts", unique_key=("ts",), not_null=("ts",))
    by_ts_cat = TableChecks(table="by_ts_cat", unique_key=("ts", "category"))
    # ROWS has two lines at T0 (books, games), distinct by category; ms apart otherwise.
    assert run_checks(make_df(), by_ts_cat).success
    failure = only_failure(run_checks(make_df(), by_ts))
    assert failure.expectation == "expect_column_values_to_be_unique"
    assert failure.details.startswith("2 unexpected of 4 rows")
    assert failure.details.endswith("e.g. 2026-11-01 10:00:00, 2026-11-01 10:00:00")
    duplicate = [*ROWS, ("o4", 1, T0 + timedelta(milliseconds=1), "toys", Decimal("1"), 1)]
    failure = only_failure(run_checks(make_df(duplicate), by_ts_cat))
    assert failure.expectation == "expect_compound_columns_to_be_unique"
    assert failure.column == "ts, category"


def test_several_failures_across_tables_in_one_error(make_df) -> None:
    rows = [*ROWS[:3], (None, 2, T0, "garden", Decimal("-1.00"), 3)]
    bad = run_checks(make_df(rows), CHECKS)
    good = run_checks(make_df(), TableChecks(table="other", row_count=4))
    other_bad = run_checks(make_df(), TableChecks(table="other", row_count=3))
    assert [f.expectation for f in bad.failures] == [  # in spec order
        "expect_column_values_to_not_be_null",
        "expect_column_values_to_be_between",
        "expect_column_sum_to_be_between",
        "expect_column_values_to_be_in_set",
    ]
    assert len(bad.summary().splitlines()) == 4
    with pytest.raises(QualityError) as err:
        require([bad, good, other_bad])
    assert err.value.reports == [bad, other_bad]
    lines = str(err.value).splitlines()
    assert lines[0] == "5 data quality check(s) failed in 2 table(s):"
    assert "order_lines: expect_column_values_to_not_be_null(order_id): 1 unexpected" in lines[1]
    assert lines[-1] == "  other: expect_table_row_count_to_equal: observed 4 rows, expected 3"


def test_missing_column_is_a_failure_not_a_crash(make_df) -> None:
    failure = only_failure(run_checks(make_df(), TableChecks(table="t", not_null=("nope",))))
    assert failure.column == "nope"
    assert failure.details.startswith("error: ")
    assert "nope" in failure.details


def test_empty_dataframe(make_df) -> None:
    checks = TableChecks(
        table="empty",
        not_null=("order_id",),
        unique_key=("order_id", "line"),
        non_negative=("amount",),
        column_sums={"amount": 0, "qty": Decimal("0.00")},
        row_count=0,
        allowed_values={"category": ("books",)},
    )
    assert run_checks(make_df([]), checks).success
    failure = only_failure(run_checks(make_df([]), TableChecks("empty", column_sums={"qty": 1})))
    assert failure.details == "observed sum 0, expected 1"


def test_empty_spec_passes_without_validating(make_df) -> None:
    assert run_checks(make_df(), TableChecks(table="nothing")) == CheckReport("nothing", True, 0)


def test_repeated_calls_reuse_assets_and_do_not_cache_data(spark, make_df) -> None:
    df = make_df()
    for _ in range(2):
        assert run_checks(df, CHECKS).success
        assert run_checks(df, TableChecks(table="order_lines", row_count=4)).success
    assert not df.is_cached


@pytest.mark.parametrize(
    "rows",
    [
        pytest.param([*ROWS[:3], (None, 1, T0, "toys", Decimal("100.00"), 3)], id="null key"),
        pytest.param([*ROWS[:3], ("o1", 2, T0, "toys", Decimal("100.00"), 3)], id="duplicate"),
        pytest.param([*ROWS[:3], ("o4", 1, T0, "toys", Decimal("-1.00"), 3)], id="negative"),
        pytest.param([*ROWS[:3], ("o4", 1, T0, "cars", Decimal("100.00"), 3)], id="not in set"),
        pytest.param(ROWS[:2], id="sums and count"),
        pytest.param([], id="empty"),
    ],
)
def test_spark_and_in_memory_checks_report_the_same(make_df, monkeypatch, rows) -> None:
    checks = replace(CHECKS, column_sums={"qty": 6})  # a decimal sum stays on Spark
    in_memory = run_checks(make_df(rows), checks)
    monkeypatch.setattr(checks_module, "IN_MEMORY_ROWS", -1)  # every frame on Spark
    assert run_checks(make_df(rows), checks) == in_memory
    assert not in_memory.success


def test_a_decimal_sum_over_many_rows_is_exact(make_df) -> None:
    amounts = [Decimal(n * 7919 % 100_000) / 100 for n in range(3_000)]
    rows = [(f"o{n}", 1, T0, "toys", a, 1) for n, a in enumerate(amounts)]
    checks = TableChecks(table="order_lines", column_sums={"amount": sum(amounts)})
    assert run_checks(make_df(rows), checks).success
    wrong = TableChecks(table="order_lines", column_sums={"amount": sum(amounts) + Decimal("0.01")})
    assert not run_checks(make_df(rows), wrong).success


def test_null_at_least_tolerates_a_share_of_marked_rows(make_df) -> None:
    rows = [(f"o{i}", 1, T0, "invalid_json" if i < 2 else None, Decimal(1), 1) for i in range(10)]
    df = make_df(rows)
    lenient = TableChecks(table="landed", null_at_least={"category": 0.8})
    assert run_checks(df, lenient).success
    strict = TableChecks(table="landed", null_at_least={"category": 0.9})
    failure = only_failure(run_checks(df, strict))
    assert failure.expectation == "expect_column_values_to_be_null"
    assert failure.column == "category"
    assert "2 unexpected of 10 rows" in failure.details and "'invalid_json'" in failure.details
    with pytest.raises(ValueError, match="null_at_least"):
        TableChecks(table="landed", null_at_least={"category": 1.5})
