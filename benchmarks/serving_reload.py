"""Serving reload: a lane view read whole at a version, or merged onto the kept base.

One run, one broker, one warm session: the benchmark workload is loaded into a fresh
topic and the Lambda speed layer catches up on it in micro-batches of ``--offsets``
offsets, fewer than ``stream.compact_every`` of them, so the log holds no compaction
yet. Then, for every view, side by side in this session:

* ``whole``: what ``lk serve`` did on every lane commit before ``serving.merge_appends``,
  and does now after a commit that rewrote the view's part: read the part at the newest
  version through Delta, merge it (and keep that as the base for the reloads after it),
  present it, collect it;
* ``after 1``: what it does on a lane commit now, from the base the reload before kept:
  read the files the commit appended (found in the commit files), merge them onto the
  base, keep that, present, collect; ``after N``: the same N commits behind (a view
  nobody asked for while the lane committed). ``N``: the most commits a lane appends
  between two compactions (``compact_every - 1``), fewer if the log's schema changed
  within them (a part's first rows add a column: a whole read).

The heap is frozen first, as ``lk serve`` freezes its own once started. Each figure is
the median of ``--repeat`` runs in a warm session, nothing else running
(the reload's own cost, not what a busy machine adds to it); every incremental result
is checked against the whole read (the same rows).

Run: ``python -m benchmarks.serving_reload [--events 100000] [--offsets 12000]
[--repeat 5]``.
"""

from __future__ import annotations

import argparse
import gc
import json
import tempfile
from functools import partial
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from benchmarks.recompute_vs_replay import capped, isolated, load_topic, records_file, spec_for
from designs.lambda_arch.epochs import run_speed
from designs.platform import build
from event_log.topics import ensure_topics
from lake.source import StateTable
from lake.spark import build_session
from lake.storage import delta_version
from measure.laps import median_run
from measure.machine import broker, machine
from serving_layer.refresh import MergedBase, load_snapshot, released
from serving_layer.snapshot import ViewSnapshot
from views.base import View

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results" / "serving_reload.json"


def rows_of(snapshot: ViewSnapshot) -> list[str]:
    """The snapshot's rows, comparable whatever their order."""
    return sorted(repr(row) for row in snapshot._rows)


def view_figures(
    spark: SparkSession, view: View, table: StateTable, newest: int, behind: list[int], repeat: int
) -> dict[str, Any]:
    """One view reloaded whole at ``newest``, and merged onto bases ``behind`` commits older."""

    def whole_read() -> ViewSnapshot:
        snapshot, base = load_snapshot(spark, view, table, newest)
        if base is not None:  # the base a whole read keeps for the reloads after it
            released(base.merged)
        return snapshot

    def merged_onto(base: MergedBase) -> ViewSnapshot:
        snapshot, kept = load_snapshot(spark, view, table, newest, base=base)
        if kept is not None and kept.merged is not base.merged:  # the next reload's base
            released(kept.merged)
        return snapshot

    whole, expected = median_run(whole_read, repeat)
    figures: dict[str, Any] = {"rows": len(expected), "whole": round(whole, 3)}
    for commits in behind:
        _, base = load_snapshot(spark, view, table, newest - commits)
        assert base is not None, f"{view.name} is not a lane view"
        files = base.appended_since(spark, table, newest, max_age=float("inf"))
        assert files is not None, f"{view.name}: more than appends since {base.at}"
        seconds, merged = median_run(partial(merged_onto, base), repeat)
        assert rows_of(merged) == rows_of(expected), f"{view.name}: rows differ"
        figures[f"after {commits}"] = {"seconds": round(seconds, 3), "files": len(files)}
        released(base.merged)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--offsets", type=int, default=12_000, help="offsets per micro-batch")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args()
    with (
        tempfile.TemporaryDirectory(prefix="lk-reload-") as tmp,
        broker(None, Path(tmp) / "kafka") as base_settings,
    ):
        settings = capped(isolated(base_settings, "reload", Path(tmp)), args.offsets)
        spark = build_session(settings, app_name="lk-serving-reload")
        info = machine(settings)
        ensure_topics(settings)
        load_topic(spark, settings, records_file(spec_for(args.events)))
        platform = build(settings)
        run_speed(spark, settings, platform.registry, until_caught_up=True)
        source = platform.serving_source(spark)
        views = list(platform.registry)
        newest = delta_version(spark, source.tables[views[0].name].path)
        assert newest is not None
        first = source.tables[views[0].name]
        deepest = next(  # the oldest base the appends since can be merged onto (no schema change)
            k
            for k in range(min(newest, settings.stream.compact_every - 1), 0, -1)
            if first.appended_files(spark, newest - k, newest) is not None
        )
        behind = sorted({1, deepest})
        gc.collect()  # as lk serve does once started (serving_layer.api)
        gc.freeze()
        per_view: dict[str, dict[str, Any]] = {}
        for view in views:
            per_view[view.name] = view_figures(
                spark, view, source.tables[view.name], newest, behind, args.repeat
            )
            print(view.name, per_view[view.name], flush=True)
        totals = {
            "whole": round(sum(f["whole"] for f in per_view.values()), 2),
            **{
                f"after {n}": round(sum(f[f"after {n}"]["seconds"] for f in per_view.values()), 2)
                for n in behind
            },
        }
        report = {
            "benchmark": "serving_reload",
            "machine": info,
            "events": args.events,
            "max_offsets_per_trigger": args.offsets,
            "log_version": newest,
            "repeat": args.repeat,
            "what": "seconds per reload of one view in a warm session, median of repeats; "
            "whole = read at the version through Delta; after N = merged onto a base N "
            "commits older (the files those commits appended)",
            "views": per_view,
            "total_over_views": totals,
            "ratios": {
                f"after {n} / whole": round(totals[f"after {n}"] / totals["whole"], 2)
                for n in behind
            },
        }
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(json.dumps(report, indent=2))
        print(json.dumps({"totals": totals, "ratios": report["ratios"]}), flush=True)
        spark.stop()


if __name__ == "__main__":
    main()
