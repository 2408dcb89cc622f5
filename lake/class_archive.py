"""A class-data archive (AppCDS) for the driver JVM: Spark's ~10,000 classes, pre-parsed.

Every ``lk`` command, test and Airflow task that touches Spark starts a driver JVM, and
the JVM spends much of its start loading and verifying Spark's, Delta's and Kafka's
classes. Java 13+ can dump the classes a run loaded into an archive that later JVMs
map instead of parsing again (``-XX:ArchiveClassesAtExit`` / ``-XX:SharedArchiveFile``).
``lk infra fetch`` builds one per set of jars and Java; ``lake.spark`` uses it when it
matches. A missing or rejected archive only costs the time it would have saved: the
JVM starts without it.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from config.settings import Settings
from lake.jvm import jvm
from lake.spark import archive_path, build_session

BUILD_TIMEOUT_S = 900


def build(settings: Settings) -> tuple[Path, float]:
    """Run a representative Spark job in a fresh JVM that dumps its classes at exit.

    Returns the archive and the seconds it took; an archive already there is kept.

    Raises:
        RuntimeError: the job failed or the JVM wrote no archive (the message says why).
    """
    target = archive_path(settings)
    if target is None:
        raise RuntimeError("class archives are disabled (spark.class_archive_dir) or no java")
    if target.exists():
        return target, 0.0
    target.parent.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="lk-cds-") as tmp:
        partial = target.with_suffix(f".{os.getpid()}.partial")
        env = {**os.environ, "LK_SPARK__CONF": "{}"}
        try:
            done = subprocess.run(
                [sys.executable, "-m", "lake.class_archive", str(partial), tmp],
                env=env,
                capture_output=True,
                text=True,
                timeout=BUILD_TIMEOUT_S,
            )
        except subprocess.TimeoutExpired as error:
            partial.unlink(missing_ok=True)
            raise RuntimeError(f"the archive job took over {BUILD_TIMEOUT_S} s") from error
        if not partial.exists():
            tail = "\n".join((done.stdout + done.stderr).splitlines()[-15:])
            raise RuntimeError(f"the JVM wrote no class archive (exit {done.returncode}):\n{tail}")
        partial.replace(target)
    for old in target.parent.glob("spark-*.jsa"):
        if old != target:
            old.unlink(missing_ok=True)
    return target, time.perf_counter() - started


def _workload(out: str, scratch: Path) -> None:
    """Session, Delta write/merge/read and a de-duplicating stream: the classes lk loads."""
    from config.settings import load_settings

    settings = load_settings()
    settings = settings.model_copy(
        update={"spark": settings.spark.model_copy(update={"log_dir": scratch / "logs"})}
    )
    spark = build_session(settings, app_name="lk-class-archive", dump_classes_to=Path(out))
    table = str(scratch / "t")
    rows = spark.range(1000).selectExpr("id", "id % 7 AS k", "current_timestamp() AS ts")
    rows.write.format("delta").save(table)
    spark.sql(
        f"MERGE INTO delta.`{table}` t USING (SELECT id, k + 1 AS k, ts FROM delta.`{table}`) s "
        "ON t.id = s.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
    )
    spark.read.format("delta").load(table).groupBy("k").count().collect()
    stream = (
        spark.readStream.format("rate")
        .option("rowsPerSecond", 100)
        .load()
        .dropDuplicates(["value"])
    )
    query = (
        stream.writeStream.trigger(processingTime="1 second")
        .option("checkpointLocation", str(scratch / "cp"))
        .foreachBatch(
            lambda df, _: df.drop("value").write.format("delta").mode("append").save(table)
        )
        .start()
    )
    deadline = time.monotonic() + 120
    while len(query.recentProgress) < 3 and time.monotonic() < deadline:
        time.sleep(1)
    query.stop()
    spark.stop()
    # A JVM dumps its archive only on a normal exit, which PySpark never asks for; the
    # gateway dies with the JVM, so the call itself fails, as intended.
    with contextlib.suppress(Exception):
        jvm(spark).System.exit(0)


if __name__ == "__main__":
    _workload(sys.argv[1], Path(sys.argv[2]))
