"""Declarative data-quality checks on Spark DataFrames, run with Great Expectations 1.x.

A :class:`TableChecks` spec says what must hold for one table (non-null columns, a unique
key, non-negative amounts, exact column sums, the row count, allowed values).
:func:`build_suite` turns it into a GX ``ExpectationSuite``; :func:`run_checks` validates a
DataFrame against it and condenses GX's result into a small :class:`CheckReport`;
:func:`require` raises :class:`QualityError` if any report failed.

GX is imported lazily, so importing this module stays cheap. One ephemeral GX context per
process is built on first use (progress bars and analytics off) with one Spark data source;
each table gets its own DataFrame asset, reused across calls. The DataFrame is passed in per
call; one too big to check in memory is cached while GX runs its jobs (one suite costs
roughly one Spark job per expectation) and released after. :func:`warm_up` builds all this
on a thread ahead of time.
Validations are serialised by a lock, since GX's data source keeps one active batch.

Known GX 1.24 semantics worth remembering:

* Column-value expectations (unique, between, in-set) ignore nulls; declare the column in
  ``not_null`` as well to reject them.
* Expected sums are compared as floats (GX types the bounds as ``float``, and on Spark 4 it
  sums integral columns as doubles), so they are exact only while the sum fits a double's
  precision (about 15 significant digits; e.g. cents up to ~10**13).
* A compound-key duplicate counts every row of the duplicated group as unexpected.
* Spark sums an empty (or all-null) column to NULL, which GX fails against any bound;
  :func:`run_checks` treats that as a sum of 0, so ``column_sums={"x": 0}`` holds there
  (and reports it as 0, as GX's pandas engine does).
* A frame of at most :data:`IN_MEMORY_ROWS` rows is checked by GX's pandas engine after
  one Spark job collects it (unless its spec sums a decimal column, which pandas-GX adds
  as floats); the checks and the reports are the same.
* A missing column or an unsummable type does not raise: it is reported as a failure
  whose details start with ``error:``.
"""

from __future__ import annotations

import functools
import os
import threading
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from config.errors import LkError

if TYPE_CHECKING:
    import great_expectations as gx
    import pandas as pd
    from great_expectations.core.batch_definition import BatchDefinition
    from great_expectations.core.expectation_validation_result import (
        ExpectationSuiteValidationResult,
        ExpectationValidationResult,
    )
    from great_expectations.data_context import AbstractDataContext
    from great_expectations.datasource.fluent import PandasDatasource, SparkDatasource
    from great_expectations.expectations.expectation_configuration import (
        ExpectationConfiguration,
    )
    from pyspark.sql import DataFrame

__all__ = [
    "CheckFailure",
    "CheckReport",
    "QualityError",
    "TableChecks",
    "build_suite",
    "require",
    "run_checks",
]

DATASOURCE_NAME = "lk_quality"
BATCH_DEFINITION_NAME = "whole_dataframe"
# Counts and observed values only: asking GX for sample unexpected values costs about one
# extra Spark job per expectation, so samples are fetched only for expectations that failed.
_RESULT_FORMAT: dict[str, Any] = {"result_format": "BASIC", "partial_unexpected_count": 0}
_SAMPLE_RESULT_FORMAT: dict[str, Any] = {"result_format": "BASIC", "partial_unexpected_count": 5}

#: A frame of at most this many rows is validated in memory: one Spark job collects it and
#: GX's pandas engine checks it, where its Spark engine runs about one job per metric (a
#: small batch run's views made some 90 jobs, most of its validation time). Larger
#: frames are validated on Spark, where they are.
IN_MEMORY_ROWS = 100_000

# GX's execution engine keeps the "active batch" per data source, so validations through the
# shared data source must not interleave.
_LOCK = threading.RLock()


@dataclass(frozen=True)
class CheckFailure:
    """One failed expectation.

    Attributes:
        expectation: GX expectation type, e.g. ``expect_column_values_to_not_be_null``.
        column: The column it applies to (several joined by ``", "``), or None for
            table-level expectations.
        details: Human-readable observed value or unexpected count.
    """

    expectation: str
    column: str | None
    details: str

    def describe(self) -> str:
        """``expectation(column): details`` (without the column part for table checks)."""
        target = f"({self.column})" if self.column else ""
        return f"{self.expectation}{target}: {self.details}"


@dataclass(frozen=True)
class CheckReport:
    """The outcome of validating one table.

    Attributes:
        table: Name of the validated table.
        success: True when every expectation held.
        evaluated: Number of expectations evaluated.
        failures: The expectations that did not hold.
    """

    table: str
    success: bool
    evaluated: int
    failures: tuple[CheckFailure, ...] = ()

    def summary(self) -> str:
        """One line per failure (``table: expectation(column): details``), or one OK line."""
        if not self.failures:
            return f"{self.table}: all {self.evaluated} expectations passed"
        return "\n".join(f"{self.table}: {failure.describe()}" for failure in self.failures)


class QualityError(LkError, RuntimeError):
    """Raised by :func:`require` when at least one table failed its checks.

    Attributes:
        reports: The failed reports (passing ones are left out).
    """

    label = "quality checks failed; what serves stays as it was"

    def __init__(self, reports: Iterable[CheckReport]) -> None:
        self.reports: list[CheckReport] = list(reports)
        count = sum(len(report.failures) for report in self.reports)
        lines = [f"{count} data quality check(s) failed in {len(self.reports)} table(s):"]
        for report in self.reports:
            lines.extend(f"  {report.table}: {failure.describe()}" for failure in report.failures)
            if not report.failures:  # success=False without details; should not happen
                lines.append(f"  {report.table}: validation failed")
        super().__init__("\n".join(lines))


def _freeze_names(value: Iterable[str] | str, what: str) -> tuple[str, ...]:
    if isinstance(value, str):
        raise TypeError(f"{what} must be a sequence of column names, not a string")
    return tuple(value)


@dataclass(frozen=True)
class TableChecks:
    """Declarative quality spec for one table.

    Attributes:
        table: Table name (used in reports and as the GX asset name).
        not_null: Columns that must not contain nulls.
        unique_key: Columns whose combination must be unique (one column or several).
        non_negative: Numeric columns whose values must be >= 0 (nulls ignored).
        column_sums: Exact expected sum per column.
        row_count: Exact expected number of rows, or None to skip.
        allowed_values: Per column, the only values allowed (nulls ignored).
        null_at_least: Per column, the smallest share of rows (0..1) that must be null:
            GX's ``mostly`` on ``expect_column_values_to_be_null``, for a column that
            marks exceptions (a quarantine reason) which a few rows may carry.
    """

    table: str
    not_null: tuple[str, ...] = ()
    unique_key: tuple[str, ...] = ()
    non_negative: tuple[str, ...] = ()
    column_sums: Mapping[str, int | Decimal] = field(default_factory=dict, hash=False)
    row_count: int | None = None
    allowed_values: Mapping[str, tuple[str, ...]] = field(default_factory=dict, hash=False)
    null_at_least: Mapping[str, float] = field(default_factory=dict, hash=False)

    def __post_init__(self) -> None:
        if not self.table:
            raise ValueError("TableChecks.table must be a non-empty name")
        for name in ("not_null", "unique_key", "non_negative"):
            object.__setattr__(self, name, _freeze_names(getattr(self, name), name))
        if self.row_count is not None and self.row_count < 0:
            raise ValueError(f"row_count must be >= 0, got {self.row_count}")
        sums = dict(self.column_sums)
        for column, expected in sums.items():
            if isinstance(expected, bool) or not isinstance(expected, int | Decimal):
                raise TypeError(f"column_sums[{column!r}] must be an int or Decimal")
        allowed = {
            column: _freeze_names(values, f"allowed_values[{column!r}]")
            for column, values in self.allowed_values.items()
        }
        shares = dict(self.null_at_least)
        for column, share in shares.items():
            if not 0.0 <= share <= 1.0:
                raise ValueError(f"null_at_least[{column!r}] must lie in [0, 1], got {share}")
        # Private copies (plain dicts, so specs stay picklable for task runners).
        object.__setattr__(self, "null_at_least", shares)
        object.__setattr__(self, "column_sums", sums)
        object.__setattr__(self, "allowed_values", allowed)


def build_suite(checks: TableChecks) -> gx.ExpectationSuite:
    """Map a :class:`TableChecks` spec onto a GX expectation suite named after the table.

    Args:
        checks: The declarative spec.

    Returns:
        A suite (not registered with any context) with one expectation per spec item.
    """
    with _LOCK:  # GX needs a current context; threads share the process's one
        _context()
        import great_expectations as gx

        expect = gx.expectations
        suite = gx.ExpectationSuite(name=f"{checks.table}_checks")
        for column in checks.not_null:
            suite.add_expectation(expect.ExpectColumnValuesToNotBeNull(column=column))
        if len(checks.unique_key) == 1:
            suite.add_expectation(expect.ExpectColumnValuesToBeUnique(column=checks.unique_key[0]))
        elif checks.unique_key:
            suite.add_expectation(
                expect.ExpectCompoundColumnsToBeUnique(column_list=list(checks.unique_key))
            )
        for column in checks.non_negative:
            suite.add_expectation(expect.ExpectColumnValuesToBeBetween(column=column, min_value=0))
        for column, expected in checks.column_sums.items():
            bound = float(expected)  # GX types its bounds as floats and compares sums so
            suite.add_expectation(
                expect.ExpectColumnSumToBeBetween(column=column, min_value=bound, max_value=bound)
            )
        if checks.row_count is not None:
            suite.add_expectation(expect.ExpectTableRowCountToEqual(value=checks.row_count))
        for column, values in checks.allowed_values.items():
            suite.add_expectation(
                expect.ExpectColumnValuesToBeInSet(column=column, value_set=list(values))
            )
        for column, share in checks.null_at_least.items():
            suite.add_expectation(expect.ExpectColumnValuesToBeNull(column=column, mostly=share))
        return suite


def warm_up() -> threading.Thread:
    """Import GX and build its context and data sources on a thread of their own.

    GX's first use costs about 12 s of Python in a fresh process; a batch run starts this
    before computing its views, so the import overlaps the Spark jobs (which leave the
    interpreter waiting on the JVM) instead of following them.
    """

    def prepare() -> None:
        with _LOCK:
            _context()
            _pandas_datasource()
            _datasource()

    thread = threading.Thread(target=prepare, name="lk-gx-warm-up", daemon=True)
    thread.start()
    return thread


@functools.cache
def _context() -> AbstractDataContext:
    """The process-wide ephemeral GX context (progress bars and analytics off), built once.

    GX 1.24 needs a current context even to add expectations to an unsaved suite, so
    :func:`build_suite` calls this too.
    """
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
    import great_expectations as gx
    from great_expectations.data_context.types.base import (
        DataContextConfig,
        InMemoryStoreBackendDefaults,
        ProgressBarsConfig,
    )

    return gx.get_context(
        mode="ephemeral",
        project_config=DataContextConfig(
            store_backend_defaults=InMemoryStoreBackendDefaults(),
            analytics_enabled=False,
            progress_bars=ProgressBarsConfig(globally=False, metric_calculations=False),
        ),
    )


@functools.cache
def _datasource() -> SparkDatasource:
    """The context's one Spark data source (built once)."""
    with warnings.catch_warnings():
        # add_spark always passes the deprecated force_reuse_spark_context flag.
        warnings.simplefilter("ignore", DeprecationWarning)
        # persist=False: GX would otherwise cache every validated DataFrame and never
        # unpersist it.
        return _context().data_sources.add_spark(name=DATASOURCE_NAME, persist=False)


@functools.cache
def _pandas_datasource() -> PandasDatasource:
    """The context's one pandas data source, for frames small enough to check in memory."""
    return _context().data_sources.add_pandas(name=f"{DATASOURCE_NAME}_in_memory")


def _batch_definition(table: str, in_memory: bool) -> BatchDefinition:
    """The whole-DataFrame batch definition of ``table``'s asset, created on first use."""
    datasource = _pandas_datasource() if in_memory else _datasource()
    with _LOCK:
        if any(asset.name == table for asset in datasource.assets):
            asset = datasource.get_asset(table)
        else:
            asset = datasource.add_dataframe_asset(name=table)
        if any(bd.name == BATCH_DEFINITION_NAME for bd in asset.batch_definitions):
            return asset.get_batch_definition(BATCH_DEFINITION_NAME)
        return asset.add_batch_definition_whole_dataframe(BATCH_DEFINITION_NAME)


def _validate(
    df: DataFrame | pd.DataFrame,
    table: str,
    suite: gx.ExpectationSuite,
    result_format: dict[str, Any],
) -> ExpectationSuiteValidationResult:
    from pyspark.sql import DataFrame

    batch_definition = _batch_definition(table, in_memory=not isinstance(df, DataFrame))
    with _LOCK:
        batch = batch_definition.get_batch(batch_parameters={"dataframe": df})
        return batch.validate(suite, result_format=result_format)


def _config(result: ExpectationValidationResult) -> ExpectationConfiguration:
    """The expectation a result is of (GX types it optional; a suite's results carry it)."""
    config = result.expectation_config
    if config is None:
        raise ValueError(f"a validation result without its expectation: {result}")
    return config


def _column_of(kwargs: Mapping[str, Any]) -> str | None:
    if kwargs.get("column") is not None:
        return str(kwargs["column"])
    if kwargs.get("column_list"):
        return ", ".join(str(c) for c in kwargs["column_list"])
    return None


def _error_message(result: ExpectationValidationResult) -> str | None:
    """GX's exception message, if computing the expectation raised (flat or per metric)."""
    info = result.exception_info or {}
    entries = [info] if "raised_exception" in info else list(info.values())
    for entry in entries:
        if isinstance(entry, Mapping) and entry.get("raised_exception"):
            message = str(entry.get("exception_message") or "unknown error")
            return message.strip().splitlines()[0]
    return None


def _fmt_value(value: Any) -> str:
    """A sample value as a reader wants it: strings quoted, keys as ``(a=1, b='x')``."""
    if isinstance(value, Mapping):
        return "(" + ", ".join(f"{k}={_fmt_value(v)}" for k, v in value.items()) + ")"
    if isinstance(value, datetime | date):
        return value.isoformat(sep=" ") if isinstance(value, datetime) else value.isoformat()
    if isinstance(value, Decimal):
        return str(value)
    return repr(value)


def _fmt_number(value: Any) -> str:
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return str(int(value))
    return str(value)


def _details(result: ExpectationValidationResult, checks: TableChecks) -> str:
    """Human-readable observed value / unexpected count of one failed expectation."""
    error = _error_message(result)
    if error is not None:
        return f"error: {error}"
    config = _config(result)
    kwargs = config.kwargs
    outcome = result.result or {}
    if config.type == "expect_column_sum_to_be_between":
        expected = checks.column_sums.get(kwargs["column"], kwargs.get("min_value"))
        observed = outcome.get("observed_value")  # Spark sums no values to NULL: that is 0
        return (
            f"observed sum {_fmt_number(0 if observed is None else observed)}, expected {expected}"
        )
    if config.type == "expect_table_row_count_to_equal":
        return f"observed {outcome.get('observed_value')} rows, expected {kwargs['value']}"
    if "unexpected_count" in outcome:
        text = f"{outcome['unexpected_count']} unexpected of {outcome.get('element_count')} rows"
        percent = outcome.get("unexpected_percent")
        if percent is not None:
            text += f" ({percent:.2f}%)"
        # a null is no example (pandas reports it as NaN, which is not equal to itself)
        samples = [
            v for v in outcome.get("partial_unexpected_list") or () if v is not None and v == v
        ]
        if samples:
            text += f", e.g. {', '.join(map(_fmt_value, samples))}"
        return text
    if "observed_value" in outcome:
        return f"observed {outcome['observed_value']!r}"
    return "failed"


def _is_empty_sum_of_zero(result: ExpectationValidationResult, checks: TableChecks) -> bool:
    """Spark sums no (non-null) values to NULL; an expected sum of 0 then holds, not fails."""
    config = _config(result)
    if config.type != "expect_column_sum_to_be_between" or _error_message(result):
        return False
    observed = (result.result or {}).get("observed_value", 0)
    expected = checks.column_sums.get(config.kwargs["column"])
    return observed is None and expected is not None and expected == 0


def _config_key(config: ExpectationConfiguration) -> tuple[str, str]:
    """Identify an expectation by type and kwargs (GX adds ``batch_id`` to result kwargs)."""
    kwargs = {k: v for k, v in config.kwargs.items() if k != "batch_id"}
    return config.type, repr(sorted(kwargs.items()))


def run_checks(df: DataFrame, checks: TableChecks) -> CheckReport:
    """Validate a Spark DataFrame against a spec with Great Expectations.

    Counts and observed values come from one GX pass; only if some column-value
    expectation fails is it re-run to collect a few sample offending values.

    Args:
        df: The DataFrame to validate (not modified; cached for GX's jobs only while it
            runs them, when it is too big to check in memory).
        checks: The declarative spec.

    Returns:
        The condensed report. An empty spec yields a passing report with 0 evaluated.
    """
    suite = build_suite(checks)
    if not suite.expectations:
        return CheckReport(table=checks.table, success=True, evaluated=0)
    from pyspark.sql import DataFrame

    data = _in_memory(df, checks)
    cached = isinstance(data, DataFrame)
    if cached:
        data = data.persist()  # GX runs about one job per expectation over it
    try:
        with _LOCK:  # GX's context and data sources are shared by the process's threads
            return _report(data, checks, suite)
    finally:
        if cached:
            data.unpersist()


def _report(
    data: DataFrame | pd.DataFrame, checks: TableChecks, suite: gx.ExpectationSuite
) -> CheckReport:
    """GX's validation of ``data``, condensed; failing column values sampled again."""
    validation = _validate(data, checks.table, suite, _RESULT_FORMAT)
    failed = [
        r for r in validation.results if not r.success and not _is_empty_sum_of_zero(r, checks)
    ]

    resample = [
        r for r in failed if (r.result or {}).get("unexpected_count") and _error_message(r) is None
    ]
    if resample:
        import great_expectations as gx

        sample_suite = gx.ExpectationSuite(name=f"{checks.table}_samples")
        for r in resample:
            sample_suite.add_expectation(_config(r).to_domain_obj())
        sampled = _validate(data, checks.table, sample_suite, _SAMPLE_RESULT_FORMAT)
        by_key = {_config_key(_config(r)): r for r in sampled.results}
        failed = [by_key.get(_config_key(_config(r)), r) for r in failed]

    # GX orders results by metric dependencies; report in the order the spec declares.
    order = {_config_key(e.configuration): i for i, e in enumerate(suite.expectations)}
    failed.sort(key=lambda r: order.get(_config_key(_config(r)), len(order)))
    failures = tuple(
        CheckFailure(
            expectation=_config(r).type,
            column=_column_of(_config(r).kwargs),
            details=_details(r, checks),
        )
        for r in failed
    )
    return CheckReport(
        table=checks.table,
        success=not failures,
        evaluated=len(validation.results),
        failures=failures,
    )


def _in_memory(df: DataFrame, checks: TableChecks) -> DataFrame | pd.DataFrame:
    """``df`` collected to pandas if it has at most :data:`IN_MEMORY_ROWS` rows, else itself.

    One job either way: the limit stops reading once it has one row too many. A spec
    that sums a decimal column stays on Spark: GX's pandas engine adds decimals as floats
    (70,306.24 came out 70,306.2399...), where Spark adds them exactly.
    """
    from pyspark.sql.types import DecimalType

    types = {f.name: f.dataType for f in df.schema.fields}
    if any(isinstance(types.get(c), DecimalType) for c in checks.column_sums):
        return df
    head = df.limit(IN_MEMORY_ROWS + 1).toPandas()
    return head if len(head) <= IN_MEMORY_ROWS else df


def require(reports: Iterable[CheckReport]) -> None:
    """Raise :class:`QualityError` if any report failed.

    Args:
        reports: Reports from :func:`run_checks`.

    Raises:
        QualityError: Listing every failed expectation of every failed report.
    """
    failed = [report for report in reports if not report.success]
    if failed:
        raise QualityError(failed)
