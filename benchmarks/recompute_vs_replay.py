"""Lambda batch recompute vs Kappa replay, side by side on one broker, in one run.

For each size (default 1M and 5M events) the same seeded workload is loaded into a fresh
topic, then timed:

* ``lambda_batch_from_log``  - ``run_batch``: read the raw log, decode, land bronze,
  recompute every view, run the quality checks, publish (issue 5 a);
* ``lambda_batch_from_bronze`` - ``run_batch(force=True)``: recompute every view from the
  already-parsed bronze table (issue 3; issue 5 b "as operated");
* ``floor_revenue_only``     - a bare Spark job: read bronze, compute only
  ``revenue_by_category``, write it (the floor of issue 3);
* ``ceiling_read_decode``    - a bare Spark job that only reads the topic and decodes
  the JSON (issue 5 c: the ceiling of any replay on this machine);
* ``kappa_reprocess``        - ``kappa.reprocess``: the streaming code from offset 0 into a
  new version, micro-batches of ``stream.replay_max_offsets_per_trigger`` (issue 5 a, b),
  then its checks and the switch; ``kappa_replay`` is its replay alone (log to a
  caught-up version), ``kappa_gate`` and ``kappa_switch`` the rest;
* ``floor_views_from_log``   - a bare Spark job that reads and decodes the topic,
  de-duplicates the valid events as a batch job (the copy at the lowest offset, as the
  contract requires of any design), computes every view over them and writes them in
  one Delta commit, laid out as a lane's log: the least any design that serves these
  views pays to rebuild them from the log here (no late events, no streaming, no state
  left to go live with), as the freshness benchmark's views floor is for a micro-batch
  (issue 15; issue 32 item 5 holds the replay against it);
* ``stream_floor_replay``    - the freshness benchmark's views floor (``compare.floor``:
  read, decode, de-duplicate, every view, one idempotent commit per micro-batch) run
  over the log from offset 0 in micro-batches of the replay's size, to the log end,
  its commits carrying the views only, as ``floor_views_from_log``'s does. Its
  de-duplication keeps every id in a RocksDB checkpoint, as a lane's does, so it could
  go on live where it stopped: the floor of a replay that must (issue 32 item 5's "the
  views floor's replay"), where ``floor_views_from_log`` is the floor of a recompute.

The replay and the two views floors are timed three ways, since a single pair differs
by 10-15 % here from run to run:

* ``_fresh``: each in a process of its own, as a user runs either (``lk kappa
  reprocess`` starts a JVM): a JVM that has run none of it, its start not timed;
* first in this JVM (no suffix): the replay, then the floors, after the batch runs (so
  the floors find shared code warm that the replay had to warm: kept to compare with
  earlier runs);
* ``_warm``: then ``WARM_ROUNDS`` rounds, each contender first in one of them; each
  contender's median, and the median of the rounds' ratios (each taken within its
  round).

Run: ``python -m benchmarks.recompute_vs_replay [--sizes 1000000 5000000] [--output F]``.
Several sizes run one after the other, each in a fresh process (one JVM with a 2 GB driver
ran out of heap in the 5M bronze MERGE after the 1M run); each size's contenders run side
by side in its process.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from batch_layer.bronze import first_copies
from batch_layer.job import run_batch
from compare.floor import run_to, start_floor
from config.settings import Settings
from designs.kappa.reprocess import replaying, reprocess
from designs.platform import build
from event_log.catalog import read_catalog, read_catalog_versions
from event_log.decode import decode_events, valid_events
from event_log.kafka_source import read_range
from event_log.topics import end_offsets, ensure_topics
from lake.source import PART
from lake.spark import build_session
from lake.tables import Tables
from measure.machine import broker, machine
from speed_layer import lane_log
from views import default_registry, revenue_by_category
from views.base import ViewContext
from workload.generator import WorkloadSpec, generate

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results" / "recompute_vs_replay.json"
CACHE = REPO / ".lk" / "bench-cache"


def spec_for(events: int) -> WorkloadSpec:
    """The benchmark workload: a day of a mid-size shop."""
    return WorkloadSpec(
        events=events, seed=7, users=20_000, products=2_000, span=WorkloadSpec().span * 4
    )


def isolated(base: Settings, label: str, workdir: Path) -> Settings:
    """Settings with topics and a storage root of their own."""
    return base.model_copy(
        update={
            "kafka": base.kafka.model_copy(
                update={"events_topic": f"events_{label}", "catalog_topic": f"catalog_{label}"}
            ),
            "storage": base.storage.model_copy(update={"root": str(workdir / label)}),
        }
    )


def capped(settings: Settings, offsets: int) -> Settings:
    """``settings`` whose live micro-batches read at most ``offsets`` offsets each."""
    stream = settings.stream.model_copy(update={"max_offsets_per_trigger": offsets})
    return settings.model_copy(update={"stream": stream})


def records_file(spec: WorkloadSpec) -> Path:
    """Generated records as ``topic<TAB>key<TAB>value`` lines (cached per spec)."""
    path = CACHE / f"workload-{spec.events}-{spec.seed}.tsv"
    if not path.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        with tmp.open("w") as out:
            for r in generate(spec):
                key = "" if r.key is None else r.key.decode()  # generate() keys every record
                value = "" if r.value is None else r.value.decode("utf-8", "replace")
                out.write(f"{r.topic}\t{key}\t{value}\n")
        tmp.rename(path)
    return path


def load_topic(spark: SparkSession, settings: Settings, path: Path) -> int:
    """Write the records to Kafka in send order with Spark's Kafka sink (one writer)."""
    lines = spark.read.text(str(path)).select(F.split("value", "\t", 3).alias("f"))
    total = 0
    for topic, name in (
        ("events", settings.kafka.events_topic),
        ("catalog", settings.kafka.catalog_topic),
    ):
        rows = (
            lines.where(F.col("f")[0] == topic)
            .select(
                F.col("f")[1].alias("key"),
                F.when(F.col("f")[2] != "", F.col("f")[2]).alias("value"),
            )
            .coalesce(1)
        )
        (
            rows.write.format("kafka")
            .option("kafka.bootstrap.servers", settings.kafka.bootstrap_servers)
            .option("topic", name)
            .save()
        )
        total += sum(end_offsets(settings, name).values())
    return total


def timed(fn: Any) -> tuple[float, Any]:
    started = time.perf_counter()
    result = fn()
    return time.perf_counter() - started, result


def floor_revenue_only(spark: SparkSession, settings: Settings, out: str) -> None:
    """Bare job: bronze -> revenue_by_category -> Delta (no other view, no checks)."""
    bronze = spark.read.format("delta").load(Tables.of(settings).bronze)
    catalog_ends = end_offsets(settings, settings.kafka.catalog_topic)
    catalog = read_catalog(spark, settings, catalog_ends)
    versions = read_catalog_versions(spark, settings, catalog_ends)
    ctx = ViewContext(settings.views, catalog, versions)
    revenue_by_category.compute(bronze, ctx).write.format("delta").mode("overwrite").save(out)


def ceiling_read_decode(spark: SparkSession, settings: Settings) -> int:
    """Bare job: read every offset of the topic and decode it; nothing else."""
    topic = settings.kafka.events_topic
    raw = read_range(spark, settings, topic, {}, end_offsets(settings, topic))
    return (
        decode_events(raw)
        .where(F.col("reason").isNull())
        .select(F.sum(F.hash("event_id", "event_time", "price")))
        .collect()[0][0]  # an aggregate: one row
        or 0
    )


def floor_views_from_log(spark: SparkSession, settings: Settings, out: str) -> None:
    """Bare job: read the topic, decode, de-duplicate, every view over the events, one commit."""
    topic = settings.kafka.events_topic
    raw = read_range(spark, settings, topic, {}, end_offsets(settings, topic))
    registry = default_registry()
    contract = registry.contract
    events = first_copies(valid_events(decode_events(raw), contract), contract.id_field)
    events = events.persist()
    catalog_ends = end_offsets(settings, settings.kafka.catalog_topic)
    catalog = read_catalog(spark, settings, catalog_ends)
    versions = read_catalog_versions(spark, settings, catalog_ends)
    ctx = ViewContext(settings.views, catalog, versions)
    pieces = [lane_log.rows(view.name, view.compute(events, ctx)) for view in registry]
    lane_log.one_frame(pieces).write.format("delta").partitionBy(PART).save(out)
    events.unpersist()


def replay_once(spark: SparkSession, settings: Settings, _label: str) -> dict[str, float]:
    """One Kappa reprocess: its seconds, and each step's (``kappa_replay`` among them)."""
    kappa = settings.model_copy(update={"mode": "kappa"})
    result = reprocess(spark, kappa, build(kappa).registry)
    steps = {f"kappa_{step}": seconds for step, seconds in result.steps.items()}
    return {"kappa_reprocess": result.seconds, **steps}


def floor_once(spark: SparkSession, settings: Settings, label: str) -> dict[str, float]:
    """One run of the views floor, written beside the lanes (``floor_views_<label>``)."""
    out = f"{settings.storage.root}/floor_views_{label}"
    seconds, _ = timed(lambda: floor_views_from_log(spark, settings, out))
    return {"floor_views_from_log": seconds}


def stream_floor_once(spark: SparkSession, settings: Settings, label: str) -> dict[str, float]:
    """The streaming views floor from offset 0 to the log end, in the replay's micro-batches.

    Its storage is its own per call (``stream_floor_<label>``), so each starts from an
    empty checkpoint, as a new Kappa version does.
    """
    ends = end_offsets(settings, settings.kafka.events_topic)
    root = f"{settings.storage.root}/stream_floor_{label}"
    split = replaying(settings, ends)
    own = split.model_copy(
        update={
            "storage": settings.storage.model_copy(update={"root": root}),
            "stream": split.stream.model_copy(update={"trigger_interval": "0 seconds"}),
        }
    )
    started = time.perf_counter()
    registry = build(settings).registry
    run_to(start_floor(spark, own, views=registry, deduplicate=True, keep_events=False)[0], ends)
    return {"stream_floor_replay": time.perf_counter() - started}


#: The contenders of issue 32 item 5, each timed by one call.
CONTENDERS: dict[str, Callable[[SparkSession, Settings, str], dict[str, float]]] = {
    "floor": floor_once,
    "stream_floor": stream_floor_once,
    "replay": replay_once,
}
#: Warm rounds of the three after a first round in the same JVM, each led by another.
WARM_ROUNDS = 3


def fresh(contender: str, bootstrap: str, label: str, workdir: Path) -> dict[str, float]:
    """``contender`` timed in a process of its own: a JVM that has run none of it.

    That is how a user runs either: ``lk kappa reprocess`` starts a process. Only the
    contender's call is timed, not the JVM's start.
    """
    with tempfile.TemporaryDirectory(prefix="lk-bench-fresh-") as tmp:
        out = Path(tmp) / "seconds.json"
        command = [sys.executable, "-m", "benchmarks.recompute_vs_replay", "--contender"]
        command += [contender, "--label", label, "--workdir", str(workdir)]
        command += ["--bootstrap", bootstrap, "--output", str(out)]
        subprocess.run(command, check=True)
        return json.loads(out.read_text())


def run_contender(args: argparse.Namespace) -> None:
    """``--contender``: time one contender on a topic another process loaded."""
    with broker(args.bootstrap, args.workdir / "kafka") as base:
        settings = isolated(base, args.label, args.workdir)
        spark = build_session(settings, app_name="lk-bench")
        result = CONTENDERS[args.contender](spark, settings, "fresh")
        args.output.write_text(json.dumps(result))
        spark.stop()


def run_size(
    base: Settings, spark: SparkSession, events: int, workdir: Path, *, replay: bool = True
) -> dict[str, Any]:
    spec = spec_for(events)
    path = records_file(spec)
    suffix = f"{events}_{int(time.time())}"
    settings = isolated(base, suffix, workdir)
    ensure_topics(settings)
    load_s, records = timed(lambda: load_topic(spark, settings, path))
    log_offsets = sum(end_offsets(settings, settings.kafka.events_topic).values())
    results: dict[str, float] = {}
    results["lambda_batch_from_log"], _ = timed(
        lambda: run_batch(spark, settings, build(settings).registry)
    )
    results["lambda_batch_from_bronze"], _ = timed(
        lambda: run_batch(spark, settings, build(settings).registry, force=True)
    )
    results["floor_revenue_only"], _ = timed(
        lambda: floor_revenue_only(spark, settings, str(workdir / suffix / "floor"))
    )
    results["ceiling_read_decode"], _ = timed(lambda: ceiling_read_decode(spark, settings))
    pairs: list[dict[str, Any]] = []
    if replay:
        for name in CONTENDERS:  # each in a JVM of its own
            ran = fresh(name, settings.kafka.bootstrap_servers, suffix, workdir)
            results |= {f"{key}_fresh": seconds for key, seconds in ran.items()}
        for name in ("replay", "floor", "stream_floor"):  # the replay first, as before
            results |= CONTENDERS[name](spark, settings, "first")
        names = list(CONTENDERS)
        for i in range(WARM_ROUNDS):
            order = names[i % len(names) :] + names[: i % len(names)]
            pair: dict[str, Any] = {"order": ", ".join(order)}
            for name in order:
                pair |= CONTENDERS[name](spark, settings, f"warm{i}")
            pairs.append(pair)
        for key in (k for k in pairs[0] if k != "order"):
            results[f"{key}_warm"] = statistics.median(p[key] for p in pairs)
    else:
        results |= floor_once(spark, settings, "only")
    rate = {k: round(log_offsets / v) for k, v in results.items()}
    return {
        "events": events,
        "log_offsets": log_offsets,
        "records_loaded": records,
        "load_seconds": round(load_s, 1),
        "replay_max_offsets_per_trigger": settings.stream.replay_max_offsets_per_trigger,
        "seconds": {k: round(v, 1) for k, v in results.items()},
        "events_per_second": rate,
        "warm_pairs": [
            {k: v if isinstance(v, str) else round(v, 1) for k, v in p.items()} for p in pairs
        ],
        "ratios": ratios(results, pairs),
    }


def ratios(seconds: dict[str, float], pairs: list[dict[str, Any]]) -> dict[str, float]:
    """The ratios the issues ask for (replay ratios only when the replay ran).

    Issue 32 item 5 asks for the replay's throughput against the views floor's, the
    floor's time over the replay's (1.0 is as fast as the floor), against each floor
    (:data:`FLOORS`): each in a JVM of its own (``_fresh``), first in this JVM, and
    warm, the median of the warm rounds' ratios (each taken within its round).
    """
    result = {
        "batch_from_bronze_vs_floor": round(
            seconds["lambda_batch_from_bronze"] / seconds["floor_revenue_only"], 2
        )
    }
    floor = seconds["floor_views_from_log"]
    result["views_floor_throughput_vs_read_decode_ceiling"] = round(
        seconds["ceiling_read_decode"] / floor, 2
    )
    if "kappa_replay" in seconds:
        replay = seconds["kappa_replay"]
        # the batch run from the log is the first work of its JVM, as the fresh runs are
        result |= {
            "kappa_replay_vs_batch_from_log": round(
                seconds["kappa_replay_fresh"] / seconds["lambda_batch_from_log"], 2
            ),
            "kappa_replay_vs_batch_from_bronze": round(
                replay / seconds["lambda_batch_from_bronze"], 2
            ),
            "kappa_reprocess_vs_batch_from_log": round(
                seconds["kappa_reprocess_fresh"] / seconds["lambda_batch_from_log"], 2
            ),
            "replay_throughput_vs_read_decode_ceiling": round(
                seconds["ceiling_read_decode"] / replay, 2
            ),
        }
        for bound, name in FLOORS.items():
            for suffix in ("_fresh", ""):
                if f"{bound}{suffix}" in seconds:
                    result[f"{name}{suffix}"] = round(
                        seconds[f"{bound}{suffix}"] / seconds[f"kappa_replay{suffix}"], 2
                    )
            if pairs and bound in pairs[0]:
                result[f"{name}_warm"] = round(
                    statistics.median(p[bound] / p["kappa_replay"] for p in pairs), 2
                )
    return result


#: Each views floor's key, and the name of the replay's throughput ratio against it.
FLOORS = {
    "floor_views_from_log": "replay_throughput_vs_views_floor",
    "stream_floor_replay": "replay_throughput_vs_stream_views_floor",
}


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| events | batch from log s | batch from bronze s | floor (revenue only) s | "
        "read+decode s | kappa replay s (fresh / first / warm) | views floor s "
        "(fresh / first / warm) | replay throughput vs views floor (fresh / first / warm) | "
        "streaming views floor s (fresh / first / warm) | replay throughput vs streaming "
        "views floor (fresh / first / warm) | kappa reprocess s, fresh (gate, switch) | "
        "replay/batch-from-log, fresh | replay vs ceiling |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        s: dict[str, Any] = defaultdict(lambda: "-", r["seconds"])
        q: dict[str, Any] = defaultdict(lambda: "-", r["ratios"])
        ways = ("_fresh", "", "_warm")
        replay = " / ".join(str(s[f"kappa_replay{w}"]) for w in ways)
        floor = " / ".join(str(s[f"floor_views_from_log{w}"]) for w in ways)
        ratio = " / ".join(str(q[f"replay_throughput_vs_views_floor{w}"]) for w in ways)
        stream = " / ".join(str(s[f"stream_floor_replay{w}"]) for w in ways)
        stream_ratio = " / ".join(
            str(q[f"replay_throughput_vs_stream_views_floor{w}"]) for w in ways
        )
        reprocess = (
            f"{s['kappa_reprocess_fresh']} ({s['kappa_gate_fresh']}, {s['kappa_switch_fresh']})"
        )
        lines.append(
            f"| {r['events']:,} | {s['lambda_batch_from_log']} | {s['lambda_batch_from_bronze']} "
            f"| {s['floor_revenue_only']} | {s['ceiling_read_decode']} | {replay} | {floor} "
            f"| {ratio} | {stream} | {stream_ratio} | {reprocess} "
            f"| {q['kappa_replay_vs_batch_from_log']} "
            f"| {q['replay_throughput_vs_read_decode_ceiling']} |"
        )
    return "\n".join(lines)


def one_process_per_size(args: argparse.Namespace) -> None:
    """Run each size in a process of its own (one broker, fresh JVM) and merge the rows."""
    rows, info = [], None
    with tempfile.TemporaryDirectory(prefix="lk-bench-parts-") as tmp:
        for size in args.sizes:
            part = Path(tmp) / f"{size}.json"
            command = [sys.executable, "-m", "benchmarks.recompute_vs_replay", "--sizes", str(size)]
            command += ["--output", str(part)] + (["--no-replay"] if args.no_replay else [])
            command += ["--bootstrap", args.bootstrap] if args.bootstrap else []
            subprocess.run(command, check=True)
            report = json.loads(part.read_text())
            info = info or report["machine"]
            rows += report["results"]
            merged = {"benchmark": "recompute_vs_replay", "machine": info, "results": rows}
            args.output.parent.mkdir(parents=True, exist_ok=True)
            args.output.write_text(json.dumps(merged, indent=2))
    print(table(rows), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000_000, 5_000_000])
    parser.add_argument("--bootstrap", default=None)
    parser.add_argument("--no-replay", action="store_true", help="time the batch layer only")
    parser.add_argument("--output", type=Path, default=RESULTS, help="where the JSON goes")
    parser.add_argument("--contender", choices=sorted(CONTENDERS), help=argparse.SUPPRESS)
    parser.add_argument("--label", help=argparse.SUPPRESS)
    parser.add_argument("--workdir", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.contender:
        run_contender(args)
        return
    if len(args.sizes) > 1:
        one_process_per_size(args)
        return
    with tempfile.TemporaryDirectory(prefix="lk-bench-") as tmp:
        workdir = Path(tmp)
        with broker(args.bootstrap, workdir / "kafka") as settings:
            spark = build_session(settings, app_name="lk-bench")
            info = machine(settings)
            rows = [run_size(settings, spark, args.sizes[0], workdir, replay=not args.no_replay)]
            report = {"benchmark": "recompute_vs_replay", "machine": info, "results": rows}
            args.output.parent.mkdir(parents=True, exist_ok=True)
            args.output.write_text(json.dumps(report, indent=2))
            print(table(rows), flush=True)
            spark.stop()


if __name__ == "__main__":
    main()
