"""The driver's class archive: named per jars and Java, used only when it is there."""

from __future__ import annotations

from pathlib import Path

import pytest

from config.settings import ConfigError, Settings, load_settings
from lake.class_archive import archive_path
from lake.spark import driver_java_options, jvm_log


def settings_with(jars: Path, archives: Path | None) -> Settings:
    return load_settings(spark={"jars_dir": str(jars), "class_archive_dir": archives})


@pytest.mark.unit
def test_the_archive_is_named_for_its_jars_and_used_only_when_built(tmp_path: Path) -> None:
    jars = tmp_path / "jars"
    jars.mkdir()
    (jars / "delta-spark.jar").write_bytes(b"x" * 10)
    settings = settings_with(jars, tmp_path / "cds")
    first = archive_path(settings)
    assert first is not None and first.parent == tmp_path / "cds"
    assert "SharedArchiveFile" not in driver_java_options(settings)  # not built yet
    first.parent.mkdir()
    first.write_bytes(b"archive")
    assert f"-XX:SharedArchiveFile={first}" in driver_java_options(settings)
    (jars / "kafka-clients.jar").write_bytes(b"y")
    assert archive_path(settings) != first  # other jars: another archive, never a stale one
    assert "SharedArchiveFile" not in driver_java_options(settings)


@pytest.mark.unit
def test_dumping_and_disabling(tmp_path: Path) -> None:
    jars = tmp_path / "jars"
    jars.mkdir()
    (jars / "a.jar").write_bytes(b"a")
    assert archive_path(settings_with(jars, None)) is None
    options = driver_java_options(settings_with(jars, None), dump_classes_to=tmp_path / "x.jsa")
    assert f"-XX:ArchiveClassesAtExit={tmp_path / 'x.jsa'}" in options
    assert "-Xlog:all=warning:stderr" in options  # JVM warnings never reach stdout


@pytest.mark.unit
def test_the_users_jvm_flags_come_after_the_platforms_own(tmp_path: Path) -> None:
    settings = load_settings(
        spark={"class_archive_dir": None, "driver_java_options": ["-XX:TieredStopAtLevel=1"]}
    )
    options = driver_java_options(settings).split()
    assert options[0] == "-Duser.timezone=UTC"
    assert options[-1] == "-XX:TieredStopAtLevel=1"


@pytest.mark.unit
def test_the_driver_runs_the_parallel_collector_unless_told_otherwise() -> None:
    default = driver_java_options(load_settings(spark={"class_archive_dir": None})).split()
    g1 = load_settings(spark={"class_archive_dir": None, "driver_gc": "G1GC"})
    assert "-XX:+UseParallelGC" in default
    assert "-XX:+UseG1GC" in driver_java_options(g1).split()
    assert "-XX:+UseParallelGC" not in driver_java_options(g1).split()
    with pytest.raises(ConfigError, match=r"spark\.driver_gc"):
        load_settings(spark={"driver_gc": "CMS"})


@pytest.mark.integration
def test_the_test_session_started_from_the_archive_setup_built(spark, base_settings) -> None:
    archive = archive_path(base_settings)
    assert archive is not None and archive.exists(), "no class archive: run `lk infra fetch`"
    runtime = spark.sparkContext._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean()
    assert f"-XX:SharedArchiveFile={archive}" in list(runtime.getInputArguments())
    log = jvm_log(base_settings, "lk-tests").read_text()
    assert [line for line in log.splitlines() if "][cds" in line] == []  # mapped, not rejected
