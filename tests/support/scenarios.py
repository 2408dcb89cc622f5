"""Oracle-equal scenarios run in a process of their own, configured by ``LK_*`` alone.

A SparkSession is one per process and its master and jars are fixed at start: a scenario
on a Spark cluster or on the object store runs here, in a child the test starts with the
cluster's environment (``python -m tests.support.scenarios NAME``), so nothing but the
settings tells it where it runs. It exits 0 when every served view equals the oracle.

Names: ``batch`` (one batch run), ``lambda`` (batch, then speed, then serving),
``kappa`` (a replay from offset 0), ``speed`` (the speed layer to the log end after
whatever ran before: the restart half of a SIGKILL test).
"""

from __future__ import annotations

import sys
from datetime import timedelta

from pyspark.sql import SparkSession

from batch_layer.job import run_batch
from config.settings import Settings, load_settings, with_sections
from designs.kappa import reprocess as kappa
from designs.kappa.versions import lane_name
from designs.lambda_arch import LAMBDA_LANE, run_speed
from designs.platform import build
from lake.spark import build_session
from lake.tables import Tables
from tests.support.expected import assert_served_per_contract
from tests.support.kafka import produce_spec
from workload.generator import WorkloadSpec

#: Small enough for CI, large enough for several micro-batches and some late events.
SPEC = WorkloadSpec(events=1_500, users=40, products=20, seed=33)
STREAM = {"max_offsets_per_trigger": 500, "replay_max_offsets_per_trigger": 1_000}


def configured(settings: Settings) -> Settings:
    """What every scenario runs with: small micro-batches, a lateness that covers the workload."""
    lateness = {"revenue_by_category": timedelta(hours=1)}
    return with_sections(settings, stream=STREAM, views={"allowed_lateness": lateness})


def batch(spark: SparkSession, settings: Settings) -> None:
    """Produce the workload, run one batch; served = the batch views = the oracle."""
    produce_spec(settings, SPEC)
    run = run_batch(spark, settings, build(settings).registry).run
    assert_served_per_contract(spark, settings, LAMBDA_LANE, cutoff=run.cutoff)


def lambda_(spark: SparkSession, settings: Settings) -> None:
    """Batch over 60% of the workload, speed over the rest; served = the oracle."""
    import oracle

    split = int(SPEC.events * 0.6)
    produce_spec(settings, SPEC, part=slice(0, split))
    run = run_batch(spark, settings, build(settings).registry).run
    catalog = oracle.catalog_state(oracle.consume_all(settings, settings.kafka.catalog_topic))
    produce_spec(settings, SPEC, part=slice(split, None))
    run_speed(spark, settings, build(settings).registry, until_caught_up=True)
    assert_served_per_contract(
        spark, settings, LAMBDA_LANE, cutoff=run.cutoff, batch_catalog=catalog
    )


def speed(spark: SparkSession, settings: Settings) -> None:
    """Run the speed layer to the log end (after a kill: from its checkpoint); check serving."""
    import oracle
    from batch_layer import runs

    run_speed(spark, settings, build(settings).registry, until_caught_up=True)
    run = runs.latest_published(spark, Tables.of(settings))
    assert run is not None, "the speed scenario follows a batch run"
    catalog_log = oracle.consume_all(settings, settings.kafka.catalog_topic)
    catalog_cut = run.catalog_cutoff or {}
    batch_catalog = oracle.catalog_state(
        r for r in catalog_log if r.offset < catalog_cut.get(r.partition, 0)
    )
    assert_served_per_contract(
        spark, settings, LAMBDA_LANE, cutoff=run.cutoff, batch_catalog=batch_catalog
    )


def kappa_(spark: SparkSession, settings: Settings) -> None:
    """Produce the workload, replay it into v1; served = the oracle."""
    kappa_settings = settings.model_copy(update={"mode": "kappa"})
    produce_spec(kappa_settings, SPEC)
    result = kappa.reprocess(spark, kappa_settings, build(kappa_settings).registry)
    assert_served_per_contract(spark, kappa_settings, lane_name(result.version))


SCENARIOS = {"batch": batch, "lambda": lambda_, "kappa": kappa_, "speed": speed}


def main(name: str) -> None:
    """Run scenario ``name`` on the session the settings describe; raise if it fails."""
    settings = configured(load_settings())
    spark = build_session(settings, app_name=f"lk-scenario-{name}")
    try:
        master = spark.sparkContext.master
        assert master == settings.spark.master, f"session on {master}"
        print(f"scenario {name}: master {master}, storage {settings.storage.uri()}", flush=True)
        SCENARIOS[name](spark, settings)
        print(f"scenario {name}: served views equal the oracle", flush=True)
    finally:
        spark.stop()


if __name__ == "__main__":
    main(sys.argv[1])
