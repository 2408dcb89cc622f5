"""The quality gate before a Kappa switch: Great Expectations over every view of a version.

Lambda publishes a batch run only once its views pass their checks; a Kappa version is
what readers get after a switch in the same way, so it passes the same kind of gate
first: every presented view has a non-null, unique key and no negative counts. (The
batch run's other checks, bronze and exact column sums against the landed events, have
nothing to check here: a version keeps no bronze, and its replay's completeness is
checked from its offsets instead.) Both routes (``lk kappa reprocess`` and the
``kappa_reprocess`` DAG) call this one function between the replay and the switch.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from pyspark.sql import SparkSession

from config.settings import Settings
from designs.kappa.versions import presented
from quality.checks import CheckReport, TableChecks, require, run_checks
from views.base import View
from views.registry import ViewRegistry


def validate_version(
    spark: SparkSession, settings: Settings, version: int, registry: ViewRegistry
) -> tuple[CheckReport, ...]:
    """Check every view ``version`` serves; its reports if all passed.

    Raises:
        QualityError: a check failed; the version does not serve (the old one does).
    """

    def check(view: View) -> CheckReport:
        checks = TableChecks(
            table=view.name, not_null=view.key, unique_key=view.key, non_negative=view.non_negative
        )
        return run_checks(presented(spark, settings, version, view), checks)

    # side by side, as the batch layer checks its views: a small view's check is mostly
    # fixed cost (planning, listing the log), and GX itself validates one table at a time
    views = list(registry)
    with ThreadPoolExecutor(max(len(views), 1), thread_name_prefix="lk-kappa-check") as pool:
        reports = list(pool.map(check, views))
    require(reports)
    return tuple(reports)
