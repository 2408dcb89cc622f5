"""The one SparkSession factory: cached jars, Delta, UTC and small-machine defaults.

Library code never builds a session; it takes one as a parameter. Only entry points
(the CLI, Airflow tasks, test fixtures, benchmarks) call :func:`build_session`.
"""

from __future__ import annotations

import os
import time

from pyspark.sql import SparkSession

from infra.jars import spark_jars
from lk.config import Settings

# Python-side timestamps (``collect()``, ``toPandas()``) follow the process time zone;
# the platform is UTC end to end.
os.environ["TZ"] = "UTC"
time.tzset()


def session_conf(settings: Settings) -> dict[str, str]:
    """Every ``spark.*`` setting the factory applies, user settings last (they win)."""
    spark = settings.spark
    conf = {
        "spark.jars": ",".join(str(j) for j in spark_jars(settings)),
        "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
        "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
        "spark.sql.session.timeZone": "UTC",
        # -Xss: Spark builds messages from long plan strings with regexes on stop;
        # the default 1 MiB thread stack overflows on them.
        "spark.driver.extraJavaOptions": "-Duser.timezone=UTC -Xss16m",
        "spark.executor.extraJavaOptions": "-Duser.timezone=UTC",
        "spark.sql.shuffle.partitions": str(spark.shuffle_partitions),
        "spark.default.parallelism": str(spark.shuffle_partitions),
        "spark.driver.memory": spark.driver_memory,
        "spark.ui.enabled": str(spark.ui_enabled).lower(),
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.adaptive.enabled": "true",
        # A streaming micro-batch runs ~180 generated classes (views, Delta commits, the
        # state store); Spark's default cache of 100 evicted them before the next
        # micro-batch could reuse them, so every micro-batch compiled them all again.
        "spark.sql.codegen.cache.maxEntries": "1000",
        "spark.sql.streaming.stateStore.providerClass": (
            "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
        ),
        # The de-duplication state commits a changelog per micro-batch instead of a
        # snapshot of its files (snapshots are made in the background): a shorter commit.
        "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
        "spark.databricks.delta.snapshotPartitions": "2",
        "spark.databricks.delta.autoCompact.enabled": "false",
        "spark.sql.warehouse.dir": f"{settings.storage.uri()}/_warehouse",
    }
    if spark.master.startswith("local"):
        conf |= {"spark.driver.bindAddress": "127.0.0.1", "spark.driver.host": "127.0.0.1"}
    return conf | dict(spark.conf)


def build_session(settings: Settings, app_name: str | None = None) -> SparkSession:
    """Build (or return the running) SparkSession for these settings."""
    if settings.spark.master.startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = SparkSession.builder.master(settings.spark.master).appName(
        app_name or settings.spark.app_name
    )
    for key, value in session_conf(settings).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark


def codegen_compilations(spark: SparkSession) -> int:
    """How many times this driver has compiled Spark-generated code (Spark's CodegenMetrics).

    A plan whose generated source was compiled before is served from the code cache and
    does not count: the number shows whether micro-batches reuse their code.
    """
    metrics = getattr(spark.sparkContext._jvm.org.apache.spark.metrics.source, "CodegenMetrics$")
    return getattr(metrics, "MODULE$").METRIC_COMPILATION_TIME().getCount()
