"""Split-view reload by view size: what one lane commit costs ``lk serve``, view by view size.

Item 2 of issue 32 asks that serving's time per commit follow the commit's rows, not the
rows the view holds. This benchmark writes a lane log of ``cart_state`` (its part, as a
lane commits it) holding ``--sizes`` cart lines, then ``--reloads`` commits of
``--touched`` cart lines each (a few thousand at 5,000 ev/s), and reloads the view after
each commit as ``lk serve``'s refresher does (``load_snapshot`` onto the base and the
snapshot the reload before kept, the pending files merged in once due). Two contenders,
one after the other on the same log in one warm session:

* ``split``: the view as registered (``split_by`` its key): only the touched values'
  rows are merged, presented and collected, and spliced into the snapshot (at any size
  here; ``lk serve`` does so from ``SPLIT_FROM`` rows served on, which these figures set);
* ``whole``: the same view with no ``split_by``: each reload merges the whole state onto
  the base and collects every row.

Every reload's rows are checked against a whole read of the same version at the end of
each size. The heap is frozen first, as ``lk serve`` freezes its own. Figures: the
median and p95 of the reloads after the first ``--skip`` (warm-up), the merge into the
base (``fold``) apart, as the refresher runs it after the answer.

Run: ``python -m benchmarks.split_reload [--sizes 12000,50000,200000] [--touched 3000]
[--reloads 20]``.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import json
import random
import statistics
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from config.settings import load_settings
from lake.source import PART, StateTable
from lake.spark import build_session
from lake.storage import delta_version
from measure.machine import machine
from serving_layer.refresh import MergedBase, load_snapshot, released
from serving_layer.snapshot import ViewSnapshot
from views.base import View
from views.cart_state import VIEW

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results" / "split_reload.json"
PART_NAME = "state/e1/cart_state"
START = datetime(2026, 1, 1)
SCHEMA = "user_id long, product_id long, quantity long, updated_at timestamp"
PRODUCTS = 5


def commit(spark: SparkSession, path: str, rows: list[tuple]) -> int:
    """``rows`` as one lane commit to ``cart_state``'s part (one file); the new version."""
    frame = spark.createDataFrame(rows, SCHEMA)
    logged = frame.select(F.lit(PART_NAME).alias(PART), F.struct(*frame.columns).alias(VIEW.name))
    logged.coalesce(1).write.format("delta").partitionBy(PART).mode("append").save(path)
    version = delta_version(spark, path)
    assert version is not None
    return version


def p95(values: list[float]) -> float:
    return sorted(values)[max(0, round(0.95 * len(values)) - 1)]


def reloads(
    spark: SparkSession, view: View, path: str, lines: int, args: argparse.Namespace
) -> dict[str, Any]:
    """A log of ``lines`` cart lines, then ``args.reloads`` commits each reloaded."""
    rows = [(i // PRODUCTS, i % PRODUCTS, 1, START) for i in range(lines)]
    table = StateTable(path, PART_NAME, view.name)
    version = commit(spark, path, rows)
    snapshot, base = load_snapshot(spark, view, table, version)
    users = lines // PRODUCTS + 2_000  # some commits open new users' carts
    shuffled = random.Random(lines)
    seconds: list[float] = []
    folds: list[float] = []
    for k in range(args.reloads):
        touched = [
            (shuffled.randrange(users), shuffled.randrange(PRODUCTS), shuffled.choice([1, -1]))
            for _ in range(args.touched)
        ]
        version = commit(spark, path, [(*t, START + timedelta(seconds=k)) for t in touched])
        assert base is not None
        started = time.perf_counter()
        snapshot, after = load_snapshot(spark, view, table, version, base=base, previous=snapshot)
        seconds.append(time.perf_counter() - started)
        assert after is not None
        if after.merged is not base.merged:
            released(base.merged)
        base = after
        if base.due(float("inf")):
            started = time.perf_counter()
            folded = base.folded(spark, view)
            folds.append(time.perf_counter() - started)
            released(base.merged)
            base = folded
    whole, _ = load_snapshot(spark, view, table, version, cache_base=False)
    assert rows_of(snapshot) == rows_of(whole), f"{view.name}: rows differ from a whole read"
    if isinstance(base, MergedBase):
        released(base.merged)
    timed = seconds[args.skip :]
    return {
        "rows": len(snapshot),
        "reload_p50": round(statistics.median(timed), 3),
        "reload_p95": round(p95(timed), 3),
        "fold_p50": round(statistics.median(folds), 3) if folds else None,
        "folds": len(folds),
    }


def rows_of(snapshot: ViewSnapshot) -> list[str]:
    return sorted(repr(row) for row in snapshot._rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="12000,50000,200000", help="cart lines, comma-separated")
    parser.add_argument("--touched", type=int, default=3_000, help="cart lines per commit")
    parser.add_argument("--reloads", type=int, default=20)
    parser.add_argument("--skip", type=int, default=3, help="first reloads left out (warm-up)")
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args()
    settings = load_settings()
    spark = build_session(settings, app_name="lk-split-reload")
    info = machine(settings)
    sizes = [int(size) for size in args.sizes.split(",")]
    contenders = {"split": VIEW, "whole": dataclasses.replace(VIEW, split_by=())}
    gc.collect()
    gc.freeze()
    figures: dict[str, dict[str, Any]] = {name: {} for name in contenders}
    with tempfile.TemporaryDirectory(prefix="lk-split-reload-") as tmp:
        reloads(spark, VIEW, f"{tmp}/warm", sizes[0], args)  # the JVM's first plans, untimed
        for lines in sizes:
            for name, view in contenders.items():
                got = reloads(spark, view, f"{tmp}/{name}{lines}", lines, args)
                figures[name][str(lines)] = got
                print(name, lines, got, flush=True)
    smallest, largest = str(sizes[0]), str(sizes[-1])
    report = {
        "benchmark": "split_reload",
        "machine": info,
        "view": VIEW.name,
        "touched_per_commit": args.touched,
        "reloads": args.reloads,
        "skipped": args.skip,
        "what": "seconds per lane-commit reload of one view in a warm session, by the view's "
        "size in cart lines; split = only the touched values merged and collected, whole = "
        "the whole state merged and collected; fold = the pending files merged into the base "
        "after the answer (not part of the reload)",
        "contenders": figures,
        "largest_over_smallest": {
            name: round(f[largest]["reload_p50"] / f[smallest]["reload_p50"], 2)
            for name, f in figures.items()
        },
        "whole_over_split_at_largest": round(
            figures["whole"][largest]["reload_p50"] / figures["split"][largest]["reload_p50"], 2
        ),
    }
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(json.dumps(report, indent=2))
    print(json.dumps({k: report[k] for k in report if k.endswith(("smallest", "largest"))}))
    spark.stop()


if __name__ == "__main__":
    main()
