"""Replay throughput: ``lk replay`` of a file vs ``lk produce`` of the same workload.

One broker, the same producer settings, one after the other on fresh topics, interleaved
over the repeats (median reported)::

    python -m benchmarks.replay_throughput [--events N] [--repeats R] [--bootstrap HOST:PORT]

* ``lk produce``: ``produce(settings, workload(spec))``, the call ``lk produce`` makes,
  generation included (as in ``benchmarks.producer_throughput``).
* ``lk replay``: the same workload's ``events`` records written beforehand to a JSON
  Lines file (one value per line), then ``produce(settings, replay_records(file, ...))``,
  the call ``lk replay`` makes: read, check and re-encode every row for the event
  contract, sort by event time (sorted runs of ``--run-rows`` spilled to disk and
  merged, so the spill path is measured), send. The file holds the workload's re-sends
  and junk too; junk rows are sent as they are.

Rates are records per second; ``lk produce`` also sends the catalog records (a few
hundred), so the two counts differ slightly. Results go to
``benchmarks/results/replay_throughput.json``; a markdown table is printed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.producer_throughput import Workload, cpu_seconds, fresh_topics, logged, run_lk
from benchmarks.producer_throughput import make_workload as _make_workload
from config.settings import Settings
from event_log.schema import SHOP
from measure.machine import broker, machine
from workload.generator import WorkloadSpec
from workload.producer import produce
from workload.replay import ReplayStats, replay_records

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results" / "replay_throughput.json"
PRODUCE, REPLAY = "lk produce", "lk replay"


def write_file(work: Workload, path: Path) -> int:
    """The workload's events-topic values, one per line (values holding a newline skipped)."""
    values = [r.value for r in work.records if r.topic == "events" and r.value is not None]
    lines = [v for v in values if b"\n" not in v]
    path.write_bytes(b"\n".join(lines) + b"\n")
    return len(lines)


def run_replay(settings: Settings, path: Path, run_rows: int) -> dict[str, Any]:
    stats = ReplayStats()
    started = time.perf_counter()
    report = produce(settings, replay_records(path, SHOP, stats, run_rows=run_rows))
    seconds = time.perf_counter() - started
    if report.failed or report.acknowledged != report.sent:
        raise RuntimeError(f"lk replay lost records: {report.as_dict()}")
    return {"records": report.sent, "seconds": seconds, "misfits": stats.misfits}


def one(
    settings: Settings,
    name: str,
    work: Workload,
    path: Path,
    args: argparse.Namespace,
    created: list[str],
) -> dict[str, Any]:
    mine = fresh_topics(settings, "replay" if name == REPLAY else "produce", created)
    cpu = cpu_seconds()
    if name == REPLAY:
        run = run_replay(mine, path, args.run_rows)
    else:
        produced = run_lk(mine, work)
        run = {"records": produced.records, "seconds": produced.seconds}
    run["cpu_seconds"] = cpu_seconds() - cpu
    stored = logged(mine, mine.kafka.events_topic, mine.kafka.catalog_topic)
    if stored != run["records"]:
        raise RuntimeError(f"{name}: {run['records']} records reported but {stored} stored")
    run["rate"] = run["records"] / run["seconds"]
    return run


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=200_000, help="events in the workload")
    parser.add_argument("--repeats", type=int, default=3, help="runs per contender (median)")
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--run-rows", type=int, default=50_000, help="rows per sorted run")
    parser.add_argument("--bootstrap", help="use this broker instead of starting one")
    parser.add_argument("--output", type=Path, default=RESULTS)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    with (
        tempfile.TemporaryDirectory(prefix="lk-bench-") as tmp,
        broker(args.bootstrap, Path(tmp) / "kafka") as settings,
    ):
        about = machine(settings)
        work = _make_workload(WorkloadSpec(events=args.events, seed=args.seed), Path(tmp))
        path = Path(tmp) / "events.jsonl"
        lines = write_file(work, path)
        created: list[str] = []
        runs: dict[str, list[dict[str, Any]]] = {PRODUCE: [], REPLAY: []}
        one(settings, PRODUCE, work, path, args, created)  # warm-up: connections, caches
        for repeat in range(args.repeats):
            order = [PRODUCE, REPLAY] if repeat % 2 == 0 else [REPLAY, PRODUCE]
            for name in order:
                run = one(settings, name, work, path, args, created)
                runs[name].append(run)
                print(
                    f"repeat {repeat + 1}/{args.repeats} {name}: {run['records']:,} records in "
                    f"{run['seconds']:.2f} s = {run['rate']:,.0f} records/s",
                    file=sys.stderr,
                )
    summary = {
        name: {
            "records": rows[0]["records"],
            "records_per_s": round(statistics.median(r["rate"] for r in rows), 1),
            "seconds_median": round(statistics.median(r["seconds"] for r in rows), 3),
            "cpu_us_per_record": round(
                statistics.median(1e6 * r["cpu_seconds"] / r["records"] for r in rows), 1
            ),
            "repeats_records_per_s": [round(r["rate"], 1) for r in rows],
        }
        for name, rows in runs.items()
    }
    ratio = summary[REPLAY]["records_per_s"] / summary[PRODUCE]["records_per_s"]
    result = {
        "benchmark": "replay_throughput",
        "command": f"python -m benchmarks.replay_throughput --events {args.events} "
        f"--repeats {args.repeats} --run-rows {args.run_rows}",
        "machine": {**about, "load_average_at_end": [round(x, 2) for x in os.getloadavg()]},
        "workload": {"events": args.events, "seed": args.seed, "file_lines": lines},
        "repeats": args.repeats,
        "contenders": summary,
        "ratio_replay_over_produce": round(ratio, 3),
        "target": 0.8,
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(result, indent=2) + "\n")
    print(markdown(result))
    return result


def markdown(result: dict[str, Any]) -> str:
    lines = [
        "| contender | records | records/s (median) | repeats | CPU us/record |",
        "|---|---:|---:|---|---:|",
    ]
    for name, row in result["contenders"].items():
        repeats = ", ".join(f"{r:,.0f}" for r in row["repeats_records_per_s"])
        lines.append(
            f"| {name} | {row['records']:,} | {row['records_per_s']:,.0f} | {repeats} | "
            f"{row['cpu_us_per_record']:.0f} |"
        )
    m = result["machine"]
    lines += [
        "",
        f"replay / produce = {result['ratio_replay_over_produce']:.2f} (target >= 0.8). "
        f"Machine: {m['cpu_count']} CPUs ({m['cpu_model']}), Python {m['python']}, "
        f"load average at start {m['load_average_at_start']}, {m['date']}.",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
