"""The machine and versions next to every figure, an isolated broker, bytes on disk."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import psutil

from config.settings import Settings, load_settings
from infra.jars import kafka_classpath
from infra.local import local_broker

REPO = Path(__file__).resolve().parents[1]


def java_version() -> str:
    """First line of ``java -version`` ("?" without a JVM)."""
    done = subprocess.run(["java", "-version"], capture_output=True, text=True, check=False)
    return (done.stderr or done.stdout).splitlines()[0] if done.returncode == 0 else "?"


def cpu_model() -> str:
    """The CPU's model name from ``/proc/cpuinfo``."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "?"


def _version(package: str) -> str:
    try:
        return version(package)
    except PackageNotFoundError:
        return "?"


def machine(settings: Settings) -> dict[str, Any]:
    """Cores, memory, load, and the versions a figure depends on."""
    jar_dir = Path(kafka_classpath(settings).rstrip("*"))
    kafka_jar = next(jar_dir.glob("kafka_2.13-*.jar"), None) or next(
        jar_dir.glob("kafka-clients-*.jar"), None
    )
    return {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "cpu_count": os.cpu_count(),
        "cpu_model": cpu_model(),
        "memory_gib": round(psutil.virtual_memory().total / 2**30, 1),
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
        "platform": platform.platform(),
        "python": platform.python_version(),
        "java": java_version(),
        "versions": {
            "pyspark": _version("pyspark"),
            "delta-spark": _version("delta-spark"),
            "kafka-python": _version("kafka-python"),
            "kafka": kafka_jar.stem.split("-", 1)[1] if kafka_jar else "?",
            "plotly": _version("plotly"),
        },
    }


@contextmanager
def broker(bootstrap: str | None, workdir: Path) -> Iterator[Settings]:
    """Settings on the given bootstrap, or on a broker of our own (stopped on exit)."""
    jars = {"jars_dir": str(REPO / ".lk/jars/kafka")}
    spark = {"jars_dir": str(REPO / ".lk/jars/spark")}
    if bootstrap:
        yield load_settings(kafka={"bootstrap_servers": bootstrap}, broker=jars, spark=spark)
        return
    base = load_settings(broker=jars, spark=spark, storage={"root": str(workdir / "data")})
    with local_broker(base, workdir) as settings:
        print(
            f"started a broker on {settings.kafka.bootstrap_servers} in {workdir}", file=sys.stderr
        )
        yield settings


def local_dir(uri: str) -> Path | None:
    """The local folder of a storage URI or path (None for remote storage)."""
    if uri.startswith("file:"):
        return Path("/" + uri.removeprefix("file:").lstrip("/"))
    return None if "://" in uri else Path(uri)


CHECKPOINT_DIRS = ("checkpoint", "_checkpoints")


def bytes_kept(root: Path | None) -> dict[str, int]:
    """Bytes under ``root`` in Delta tables, in streaming checkpoints and elsewhere.

    A folder holding ``_delta_log`` is a table (with everything below it); a folder
    named ``checkpoint`` or ``_checkpoints`` is a streaming checkpoint.

    Raises:
        ValueError: ``root`` is None, :func:`local_dir`'s answer for remote storage.
    """
    if root is None:
        raise ValueError("bytes kept are counted in a local folder; the storage is remote")
    found = {"delta_tables": 0, "checkpoints": 0, "other": 0, "tables": 0, "checkpoint_dirs": 0}
    if not root.exists():
        return found
    for folder, dirs, files in os.walk(root):
        parts = Path(folder).relative_to(root).parts
        if any(p in CHECKPOINT_DIRS for p in parts):
            kind = "checkpoints"
        elif any(
            (root.joinpath(*parts[:n]) / "_delta_log").is_dir() for n in range(len(parts) + 1)
        ):
            kind = "delta_tables"
        else:
            kind = "other"
        found["tables"] += "_delta_log" in dirs
        found["checkpoint_dirs"] += sum(d in CHECKPOINT_DIRS for d in dirs)
        for name in files:
            try:
                found[kind] += (Path(folder) / name).stat().st_size
            except OSError:
                continue
    return found


def topic_bytes(settings: Settings, topic: str) -> int | None:
    """Bytes the local broker keeps for ``topic`` (None when the broker is not local)."""
    data = Path(settings.broker.home) / "data"
    if not data.exists():
        return None
    total = 0
    for folder in data.glob(f"{topic}-*"):
        if folder.name.rsplit("-", 1)[0] == topic:
            # blocks, not sizes: Kafka preallocates its index files sparsely
            total += sum(f.stat().st_blocks * 512 for f in folder.iterdir() if f.is_file())
    return total
