"""What the five views cost by themselves, next to reading and decoding the topic.

One run, one broker: the benchmark workload is loaded into a fresh topic and landed into
bronze by one batch run (not timed). Then, per round, side by side in one JVM:

* ``ceiling_read_decode`` - the bare job that reads and decodes the topic;
* each view's ``evaluate`` over bronze (parsed, cached in memory) into Spark's ``noop``
  sink: the view's own work, with nothing read from Kafka, decoded or written.

``ideal_replay_vs_ceiling`` = ceiling / (ceiling + all views): the ratio issue 5 (c) asks
of the replay, for a pipeline that paid only for decoding and the views. Medians over
``--rounds`` rounds.

Run: ``python -m benchmarks.view_cost [--events 1000000] [--rounds 3]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
from pathlib import Path

from batch_layer.job import run_batch
from benchmarks.recompute_vs_replay import (
    ceiling_read_decode,
    isolated,
    load_topic,
    records_file,
    spec_for,
    timed,
)
from designs.platform import build
from event_log.catalog import read_catalog, read_catalog_versions
from event_log.topics import end_offsets, ensure_topics
from lake.spark import build_session
from lake.tables import Tables
from measure.machine import broker, machine
from views import default_registry
from views.base import ViewContext

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results" / "view_cost.json"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with (
        tempfile.TemporaryDirectory(prefix="lk-view-cost-") as tmp,
        broker(None, Path(tmp) / "kafka") as base,
    ):
        settings = isolated(base, "views", Path(tmp))
        spark = build_session(settings, app_name="lk-view-cost")
        info = machine(settings)
        ensure_topics(settings)
        load_topic(spark, settings, records_file(spec_for(args.events)))
        offsets = sum(end_offsets(settings, settings.kafka.events_topic).values())
        run_batch(spark, settings, build(settings).registry)
        bronze = spark.read.format("delta").load(Tables.of(settings).bronze).persist()
        catalog_ends = end_offsets(settings, settings.kafka.catalog_topic)
        catalog = read_catalog(spark, settings, catalog_ends).persist()
        bronze.count()
        catalog.count()
        versions = read_catalog_versions(spark, settings, catalog_ends).persist()
        ctx = ViewContext(settings.views, catalog, versions)
        rounds = []
        for _ in range(args.rounds):
            seconds = {
                "ceiling_read_decode": timed(lambda: ceiling_read_decode(spark, settings))[0]
            }
            for view in default_registry():
                sink = view.evaluate(bronze, ctx).write.format("noop").mode("overwrite")
                seconds[view.name] = timed(sink.save)[0]
            rounds.append({k: round(v, 2) for k, v in seconds.items()})
            print(rounds[-1], flush=True)
        medians = {k: statistics.median(r[k] for r in rounds) for k in rounds[0]}
        views = sum(v for k, v in medians.items() if k != "ceiling_read_decode")
        ceiling = medians["ceiling_read_decode"]
        report = {
            "benchmark": "view_cost",
            "machine": info,
            "events": args.events,
            "log_offsets": offsets,
            "rounds": rounds,
            "median_seconds": medians,
            "all_views_seconds": round(views, 2),
            "ideal_replay_vs_ceiling": round(ceiling / (ceiling + views), 2),
        }
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(json.dumps(report, indent=2))
        print(
            json.dumps(
                {
                    k: report[k]
                    for k in ("median_seconds", "all_views_seconds", "ideal_replay_vs_ceiling")
                },
                indent=2,
            )
        )
        spark.stop()


if __name__ == "__main__":
    main()
