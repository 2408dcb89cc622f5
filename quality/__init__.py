"""Data-quality checks for the platform's tables, run with Great Expectations."""

from quality.checks import (
    CheckFailure,
    CheckReport,
    QualityError,
    TableChecks,
    build_suite,
    require,
    run_checks,
    warm_up,
)

__all__ = [
    "CheckFailure",
    "CheckReport",
    "QualityError",
    "TableChecks",
    "build_suite",
    "require",
    "run_checks",
    "warm_up",
]
