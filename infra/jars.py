"""Fetch the JVM artifacts from Maven Central with Maven into a git-ignored cache."""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from config.errors import LkError
from config.settings import Settings

POMS = Path(__file__).parent / "maven"
_VERSIONED = re.compile(r"^(?P<artifact>.+?)-\d[\w.\-]*\.jar$")


class MissingJarsError(LkError, RuntimeError):
    """The jar cache is empty: ``lk infra fetch`` has not run on this machine."""

    exit_code = 2
    label = "set-up missing"


@dataclass(frozen=True)
class JarSet:
    """One cache folder filled from one POM."""

    name: str
    pom: Path
    target: Path

    def jars(self) -> list[Path]:
        """The cached jars, sorted; raise if none are there."""
        found = sorted(self.target.glob("*.jar")) if self.target.is_dir() else []
        if not found:
            raise MissingJarsError(
                f"no {self.name} jars in {self.target}: run `lk infra fetch` (or `make setup`)"
            )
        return found


def jar_sets(settings: Settings) -> tuple[JarSet, JarSet]:
    """The Spark extras and the Kafka broker jar sets for these settings."""
    return (
        JarSet("spark", POMS / "spark" / "pom.xml", settings.spark.jars_dir.resolve()),
        JarSet("kafka", POMS / "broker" / "pom.xml", settings.broker.jars_dir.resolve()),
    )


def s3a_jar_set(settings: Settings) -> JarSet:
    """The S3A connector (hadoop-aws and the AWS SDK modules it calls)."""
    return JarSet("s3a", POMS / "s3" / "pom.xml", settings.storage.jars_dir.resolve())


def artifact_name(jar: Path) -> str:
    """``kafka-clients-3.9.1.jar`` -> ``kafka-clients``."""
    match = _VERSIONED.match(jar.name)
    return match.group("artifact") if match else jar.stem


def _pyspark_artifacts() -> set[str]:
    import pyspark  # here, not at the top: every `lk` command imports this module

    return {artifact_name(j) for j in (Path(pyspark.__file__).parent / "jars").glob("*.jar")}


def fetch(jar_set: JarSet, *, prune_pyspark: bool) -> list[Path]:
    """Run Maven for one POM into its cache folder; optionally drop what pyspark ships."""
    if shutil.which("mvn") is None:
        raise MissingJarsError("Maven (`mvn`) is not on PATH; install it (apt-get install maven)")
    jar_set.target.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [
            "mvn",
            "-B",
            "-q",
            "-f",
            str(jar_set.pom),
            "dependency:copy-dependencies",
            "-DincludeScope=runtime",
            f"-DoutputDirectory={jar_set.target}",
        ],
        check=True,
    )
    if prune_pyspark:
        shipped = _pyspark_artifacts()
        for jar in jar_set.target.glob("*.jar"):
            if artifact_name(jar) in shipped:
                jar.unlink()
    return jar_set.jars()


def fetch_all(settings: Settings) -> dict[str, list[Path]]:
    """Fetch every jar set (idempotent: Maven's local repository makes re-runs cheap)."""
    spark, kafka = jar_sets(settings)
    s3a = s3a_jar_set(settings)
    return {
        spark.name: fetch(spark, prune_pyspark=True),
        kafka.name: fetch(kafka, prune_pyspark=False),
        s3a.name: fetch(s3a, prune_pyspark=True),
    }


def spark_jars(settings: Settings) -> list[Path]:
    """Local paths of the Spark extras, for ``spark.jars``.

    With them the S3A connector when the storage root is ``s3a://``: a local root's
    sessions load none of it.
    """
    extras = jar_sets(settings)[0].jars()
    if settings.storage.on_object_store():
        return extras + s3a_jar_set(settings).jars()
    return extras


def kafka_classpath(settings: Settings) -> str:
    """A ``java -cp`` value holding every broker jar."""
    jar_sets(settings)[1].jars()
    return str(settings.broker.jars_dir.resolve() / "*")
