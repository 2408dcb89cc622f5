"""Where a driver's cores went: task time per call site and per minute, from a Spark event log.

A lane's phase timings say how long a micro-batch waited, not for whose tasks: on two
cores, a job the lane's process runs beside its micro-batches (the alerts' publish) holds
them while the micro-batch's own jobs queue. Spark's event log records every task; this
adds up their run and CPU time by the call site of the job they belong to.

Run a contender with its event log on, uncompressed (``LK_SPARK__CONF='{"spark.eventLog.
enabled": "true", "spark.eventLog.dir": "file:///tmp/ev", "spark.eventLog.compress":
"false"}'``), then ``python -m benchmarks.task_time /tmp/ev/<app> [--site alerts.py]``:
the call sites by task time, and per minute of the run the task time of the sites that
match ``--site``. A compressed log can be read after ``zstd -d``.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any


def log_events(path: Path) -> Iterator[dict[str, Any]]:
    """The events of an event log: a file, or a rolling log's directory of ``events_*``."""
    files = sorted(path.glob("events_*")) if path.is_dir() else [path]
    for file in files:
        if file.suffix in (".zstd", ".lz4", ".snappy", ".lzf"):
            raise ValueError(f"{file} is compressed: decompress it, or log with compress=false")
        with file.open() as lines:
            for line in lines:
                if line.strip():
                    yield json.loads(line)


def task_time(events: Iterable[dict[str, Any]], site: str | None = None) -> dict[str, Any]:
    """Task run and CPU seconds per job call site, and per minute for sites containing ``site``.

    Minutes count from the first job's submission; a task belongs to the minute its job
    was submitted in.
    """
    stage_site: dict[int, str] = {}
    job_start: dict[int, int] = {}
    stage_job: dict[int, int] = {}
    by_site: dict[str, dict[str, float]] = defaultdict(lambda: {"tasks": 0, "run": 0.0, "cpu": 0.0})
    per_minute: dict[int, dict[str, float]] = defaultdict(lambda: {"run": 0.0, "cpu": 0.0})
    first: int | None = None
    for event in events:
        kind = event.get("Event")
        if kind == "SparkListenerJobStart":
            where = (event.get("Properties") or {}).get("callSite.short") or "(none)"
            job_start[event["Job ID"]] = event["Submission Time"]
            first = event["Submission Time"] if first is None else first
            for stage in event["Stage IDs"]:
                stage_site[stage] = where
                stage_job[stage] = event["Job ID"]
        elif kind == "SparkListenerTaskEnd":
            stage = event["Stage ID"]
            metrics = event.get("Task Metrics") or {}
            run = metrics.get("Executor Run Time", 0) / 1000
            cpu = metrics.get("Executor CPU Time", 0) / 1e9
            where = stage_site.get(stage, "(none)")
            totals = by_site[where]
            totals["tasks"] += 1
            totals["run"] += run
            totals["cpu"] += cpu
            if site is not None and site in where and first is not None:
                minute = (job_start[stage_job[stage]] - first) // 60_000
                per_minute[minute]["run"] += run
                per_minute[minute]["cpu"] += cpu
    ranked = sorted(by_site.items(), key=lambda item: -item[1]["run"])
    return {
        "sites": [
            {
                "site": where,
                "tasks": int(t["tasks"]),
                "run_s": round(t["run"], 1),
                "cpu_s": round(t["cpu"], 1),
            }
            for where, t in ranked
        ],
        "site": site,
        "per_minute": [
            {"minute": m, "run_s": round(t["run"], 1), "cpu_s": round(t["cpu"], 1)}
            for m, t in sorted(per_minute.items())
        ],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("log", type=Path, help="an event log file, or a rolling log's directory")
    parser.add_argument("--site", help="per minute, the task time of call sites containing this")
    args = parser.parse_args()
    print(json.dumps(task_time(log_events(args.log), args.site), indent=2))


if __name__ == "__main__":
    main()
