"""The one SparkSession factory: cached jars, Delta, UTC and small-machine defaults.

Library code never builds a session; it takes one as a parameter. Only entry points
(the CLI, Airflow tasks, test fixtures, benchmarks) call :func:`build_session`.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from pyspark import SparkContext
from pyspark.sql import SparkSession

from config.settings import Settings
from infra.jars import spark_jars
from infra.object_store import credentials
from lake.jvm import jvm
from lake.pools import ALLOCATION_FILE

# Python-side timestamps (``collect()``, ``toPandas()``) follow the process time zone;
# the platform is UTC end to end.
os.environ["TZ"] = "UTC"
time.tzset()


def _java() -> Path | None:
    home = os.environ.get("JAVA_HOME")
    found = Path(home) / "bin" / "java" if home else shutil.which("java")
    return Path(found).resolve() if found else None


def archive_path(settings: Settings) -> Path | None:
    """The archive for these jars, this pyspark and this Java; None when disabled.

    The name carries a digest of all three, so an upgrade never maps a stale archive.
    """
    folder, java = settings.spark.class_archive_dir, _java()
    if folder is None or java is None:
        return None
    import pyspark

    identity = [
        pyspark.__version__,
        f"{java}:{java.stat().st_mtime_ns}",
        *(f"{jar.name}:{jar.stat().st_size}" for jar in spark_jars(settings)),
    ]
    digest = hashlib.sha1("\n".join(identity).encode()).hexdigest()[:12]
    return folder.resolve() / f"spark-{digest}.jsa"


def driver_java_options(settings: Settings, dump_classes_to: Path | None = None) -> str:
    """The driver JVM's flags: the platform's own, then ``spark.driver_java_options``.

    The platform's own are UTC; -Xss16m, as Spark builds messages from long plan strings
    with regexes on stop and the default 1 MiB thread stack overflows on them; -Xlog, so
    the JVM's warnings go to stderr (the session's log file, :func:`jvm_log`), never to
    a command's stdout; the garbage collector (``spark.driver_gc``); and the class
    archive (:mod:`lake.class_archive`) when one matches these jars and this Java.
    """
    options = [
        "-Duser.timezone=UTC",
        "-Xss16m",
        "-Xlog:disable",
        "-Xlog:all=warning:stderr",
        f"-XX:+Use{settings.spark.driver_gc}",
    ]
    if dump_classes_to is not None:
        options.append(f"-XX:ArchiveClassesAtExit={dump_classes_to}")
    elif (archive := archive_path(settings)) is not None and archive.exists():
        options.append(f"-XX:SharedArchiveFile={archive}")
    return " ".join([*options, *settings.spark.driver_java_options])


#: Whether RocksDB state stores count their rows (Spark's ``numRowsTotal``).
STATE_STORE_ROWS = "spark.sql.streaming.stateStore.rocksdb.trackTotalNumberOfRows"


@contextmanager
def session_settings(spark: SparkSession, conf: Mapping[str, str]) -> Iterator[None]:
    """Set ``conf`` on the session for the block, then put back what was there before.

    For a setting that only one action needs (a streaming query copies its session's
    settings when it starts; OPTIMIZE reads its file size when it plans).
    """
    before = {key: spark.conf.get(key, None) for key in conf}
    for key, value in conf.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, earlier in before.items():
            if earlier is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, earlier)


def session_conf(settings: Settings, dump_classes_to: Path | None = None) -> dict[str, str]:
    """Every ``spark.*`` setting the factory applies, user settings last (they win)."""
    spark = settings.spark
    conf = {
        "spark.jars": ",".join(str(j) for j in spark_jars(settings)),
        "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
        "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
        "spark.sql.session.timeZone": "UTC",
        "spark.driver.extraJavaOptions": driver_java_options(settings, dump_classes_to),
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
        # RocksDB counts the rows it holds by reading every key before it writes it: a
        # second lookup per id de-duplicated (de-duplicating 1M events: 15-18 s with the
        # count, 13-14 without, one JVM). A lane counts the ids it holds from its progress rows
        # instead; it turns the count back on only for a de-duplication horizon, whose
        # expired ids only Spark can count (speed_layer.query).
        STATE_STORE_ROWS: "false",
        # What the driver keeps of finished work. Spark's status store holds 1,000 SQL
        # executions (each with its plan text) and 1,000 jobs and stages, and Delta caches
        # 1,000 tables' logs, even with the UI off: a lane running for hours, or the test
        # session's hour of queries, filled a 2 GB driver with them ("GC overhead limit").
        "spark.sql.ui.retainedExecutions": "50",
        "spark.ui.retainedJobs": "100",
        "spark.ui.retainedStages": "100",
        "spark.ui.retainedTasks": "10000",
        "spark.sql.streaming.ui.retainedQueries": "20",
        "spark.sql.streaming.ui.retainedProgressUpdates": "20",
        "spark.databricks.delta.delta.log.cacheSize": "64",
        "spark.databricks.delta.snapshotPartitions": "2",
        "spark.databricks.delta.autoCompact.enabled": "false",
        "spark.sql.warehouse.dir": f"{settings.storage.uri()}/_warehouse",
    }
    if spark.scheduler_pools:
        conf |= {
            "spark.scheduler.mode": "FAIR",
            "spark.scheduler.allocation.file": str(ALLOCATION_FILE),
        }
    if _on_loopback(spark.master):
        conf |= {"spark.driver.bindAddress": "127.0.0.1", "spark.driver.host": "127.0.0.1"}
    if spark.is_cluster():
        conf |= cluster_conf(settings)
    if settings.storage.on_object_store():
        conf |= s3a_conf(settings)
    return conf | dict(spark.conf)


REPO = Path(__file__).resolve().parents[1]


def _on_loopback(master: str) -> bool:
    return master.startswith("local") or master.startswith(
        ("spark://127.0.0.1:", "spark://localhost:")
    )


def cluster_conf(settings: Settings) -> dict[str, str]:
    """What executors on a cluster need: the venv's Python, the project on its path, UTC.

    The jars need nothing more: the driver serves ``spark.jars`` to every executor.
    """
    python = settings.spark.python or sys.executable
    return {
        "spark.pyspark.python": python,
        "spark.pyspark.driver.python": sys.executable,
        "spark.executorEnv.PYTHONPATH": str(REPO),
        "spark.executorEnv.TZ": "UTC",
        "spark.executor.memory": settings.spark.executor_memory,
    }


def s3a_conf(settings: Settings) -> dict[str, str]:
    """Hadoop's S3A options for an ``s3a://`` storage root: endpoint, keys, addressing.

    Delta picks its S3 log store (one writing driver per table) from the scheme itself.
    """
    storage = settings.storage
    conf = {
        "spark.hadoop.fs.s3a.impl": "org.apache.hadoop.fs.s3a.S3AFileSystem",
        "spark.hadoop.fs.s3a.path.style.access": str(storage.path_style_access).lower(),
        "spark.hadoop.fs.s3a.endpoint.region": storage.region,
    }
    if storage.endpoint is not None:
        conf["spark.hadoop.fs.s3a.endpoint"] = storage.endpoint
        ssl = storage.endpoint.startswith("https://")
        conf["spark.hadoop.fs.s3a.connection.ssl.enabled"] = str(ssl).lower()
    if (keys := credentials(settings)) is not None:
        conf["spark.hadoop.fs.s3a.access.key"] = keys.access_key
        conf["spark.hadoop.fs.s3a.secret.key"] = keys.secret_key
    return conf


@contextmanager
def _stderr_to(log: Path) -> Iterator[None]:
    """Point file descriptor 2 at ``log`` while a JVM starts; it keeps that stderr for life.

    The driver JVM prints its start-up chatter and every later log4j line on the stderr
    it inherits; the Python process gets its own stderr back at once.
    """
    log.parent.mkdir(parents=True, exist_ok=True)
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with log.open("ab") as target:
            os.dup2(target.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def jvm_log(settings: Settings, app_name: str) -> Path:
    """The file a session's driver JVM writes its console output to."""
    return settings.spark.log_dir.resolve() / f"{app_name}.log"


def build_session(
    settings: Settings, app_name: str | None = None, dump_classes_to: Path | None = None
) -> SparkSession:
    """Build (or return the running) SparkSession for these settings.

    A new driver JVM writes its console output to :func:`jvm_log`, not the terminal.
    ``dump_classes_to``: the JVM writes a class archive there when it exits (only
    :mod:`lake.class_archive` asks for one).
    """
    name = app_name or settings.spark.app_name
    if _on_loopback(settings.spark.master):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = SparkSession.builder.master(settings.spark.master).appName(name)
    for key, value in session_conf(settings, dump_classes_to).items():
        builder = builder.config(key, value)
    if SparkContext._active_spark_context is None:
        with _stderr_to(jvm_log(settings, name)):
            spark = builder.getOrCreate()
    else:
        spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("WARN")
    return spark


def codegen_compilations(spark: SparkSession) -> int:
    """How many times this driver has compiled Spark-generated code (Spark's CodegenMetrics).

    A plan whose generated source was compiled before is served from the code cache and
    does not count: the number shows whether micro-batches reuse their code.
    """
    metrics = getattr(jvm(spark).org.apache.spark.metrics.source, "CodegenMetrics$")
    return getattr(metrics, "MODULE$").METRIC_COMPILATION_TIME().getCount()
