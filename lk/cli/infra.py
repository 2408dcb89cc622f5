"""``lk infra``: fetch jars, start/stop/inspect the local Kafka broker."""

from __future__ import annotations

import json
import subprocess
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from lk.cli import common
from lk.cli.common import console, failures_as_exit

if TYPE_CHECKING:
    from config.settings import Settings
    from infra.kafka_broker import BrokerStatus

#: The bucket ``lk infra up --object-store`` creates when ``storage.root`` names none
#: (the one ``lk.cluster.yaml`` uses).
DEFAULT_BUCKET = "lk-lake"

app = typer.Typer(help="Fetch jars and run the local Kafka broker.", no_args_is_help=True)


def _expected() -> tuple[type[BaseException], ...]:
    """Other packages' errors a user can act on: printed in red, exit code 1, no traceback.

    (The platform's own, ``BrokerError`` and ``MissingJarsError``, are ``LkError``s.)
    Imported here, not at the top: every ``lk`` command imports this module, and the
    Kafka client alone takes a noticeable part of a second to import.
    """
    from kafka.errors import KafkaError

    return (subprocess.CalledProcessError, KafkaError)


def _print_status(status: BrokerStatus) -> None:
    state = f"[green]running[/green] (pid {status.pid})" if status.running else "[red]stopped[/red]"
    console.print(f"broker {status.bootstrap}: {state}  home {status.home}")
    if len(status.nodes) > 1:
        console.print(
            "nodes: "
            + ", ".join(f"{n}: {pid or '[red]down[/red]'}" for n, pid in status.nodes.items())
        )
    if not status.running:
        return
    table = Table("topic", "partition", "start offset", "end offset", "retention.ms", "cleanup")
    for topic in status.topics:
        for i, partition in enumerate(sorted(topic.end_offsets)):
            first = i == 0
            table.add_row(
                topic.name if first else "",
                str(partition),
                str(topic.start_offsets.get(partition, "")),
                str(topic.end_offsets[partition]),
                (topic.retention_ms or "") if first else "",
                (topic.cleanup_policy or "") if first else "",
                end_section=i == topic.partitions - 1,
            )
    console.print(table if status.topics else "no topics")


@app.command()
def fetch() -> None:
    """Fetch the Spark extras and the Kafka broker jars; build the driver's class archive."""
    from infra import jars

    settings = common.infra_settings()
    with failures_as_exit(*_expected()):
        found = jars.fetch_all(settings)
    for name, paths in found.items():
        console.print(f"{name}: {len(paths)} jars in {paths[0].parent}")
    from lake import class_archive

    with console.status("building the driver's class archive (faster JVM starts) ..."):
        try:
            archive, seconds = class_archive.build(settings)
        except RuntimeError as error:  # an optimisation: every command still works without it
            console.print(f"class archive: not built, JVMs start without one ({error})")
            return
    built = f"built in {seconds:.0f} s" if seconds else "already there"
    console.print(f"class archive: {archive} ({built})")


@app.command()
def up(
    brokers: Annotated[
        int | None,
        typer.Option(
            min=1,
            max=9,
            help="Nodes of the local KRaft cluster (default broker.count); from 3 on, "
            "topics are replicated 3 times with min.insync.replicas=2.",
        ),
    ] = None,
    object_store: Annotated[
        bool,
        typer.Option(
            "--object-store",
            help="Also run a local S3-compatible server (SeaweedFS, 127.0.0.1:"
            "storage.server_port) and create storage.root's bucket.",
        ),
    ] = False,
    spark_workers: Annotated[
        int,
        typer.Option(
            min=0,
            max=8,
            help="Also run a Spark standalone master and this many workers on 127.0.0.1 "
            "(spark.master_port; web UI on spark.master_ui_port).",
        ),
    ] = 0,
) -> None:
    """Start the broker (fetching its jars if missing), create the topics, show the status.

    With ``--object-store`` and ``--spark-workers N``, the object store and a Spark
    cluster too: what ``lk.cluster.yaml`` points the platform at.
    """
    from event_log import topics
    from infra import jars, kafka_broker
    from infra.local import cluster_settings

    settings = common.infra_settings()
    if object_store:
        _object_store_up(settings)
    if spark_workers:
        _spark_cluster_up(settings, spark_workers)
    if brokers is not None and brokers != settings.broker.count:
        settings = cluster_settings(settings, brokers)
        console.print(
            f"a {brokers}-node cluster: other commands need LK_BROKER__COUNT={brokers} "
            f"LK_KAFKA__BOOTSTRAP_SERVERS={settings.kafka.bootstrap_servers} "
            f"LK_KAFKA__REPLICATION_FACTOR={settings.kafka.replication_factor} "
            f"LK_KAFKA__MIN_INSYNC_REPLICAS={settings.kafka.min_insync_replicas}"
        )

    kafka_jars = jars.jar_sets(settings)[1]
    with failures_as_exit(*_expected()):
        if not any(kafka_jars.target.glob("*.jar")):
            console.print(f"fetching the Kafka broker jars into {kafka_jars.target} ...")
            jars.fetch(kafka_jars, prune_pyspark=False)
        kafka_broker.up(settings)
        topics.ensure_topics(settings)
        current = kafka_broker.status(settings)
    _print_status(current)


def _object_store_up(settings: Settings) -> None:
    from infra import jars, object_store

    s3a = jars.s3a_jar_set(settings)
    with failures_as_exit(*_expected()):
        if not any(s3a.target.glob("*.jar")) if s3a.target.is_dir() else True:
            console.print(f"fetching the S3A connector into {s3a.target} ...")
            jars.fetch(s3a, prune_pyspark=True)
        store = object_store.up(settings)
    console.print(
        f"object store {store.endpoint}: [green]running[/green] (pid {store.pid}), "
        f"buckets {', '.join(store.buckets) or 'none'}; keys in {store.home}/credentials.json "
        "unless storage.access_key/secret_key are set"
    )
    if not settings.storage.on_object_store():
        with failures_as_exit(*_expected()):
            object_store.ensure_bucket(settings, DEFAULT_BUCKET)
        console.print(
            f"to use it: LK_STORAGE__ROOT=s3a://{DEFAULT_BUCKET}/data "
            f"LK_STORAGE__ENDPOINT={store.endpoint} (or LK_CONFIG=lk.cluster.yaml)"
        )


def _spark_cluster_up(settings: Settings, workers: int) -> None:
    from infra import spark_cluster

    with failures_as_exit(*_expected()):
        cluster = spark_cluster.up(settings, workers)
    console.print(
        f"spark cluster {cluster.master_url}: [green]{cluster.alive_workers} workers[/green] "
        f"({cluster.cores} cores, {cluster.memory_mb} MiB), UI {cluster.ui}"
    )
    if settings.spark.master != cluster.master_url:
        console.print(f"to use it: LK_SPARK__MASTER={cluster.master_url}")


@app.command()
def down() -> None:
    """Stop the broker (every node), the Spark cluster and the object store if they run."""
    from infra import kafka_broker, object_store, spark_cluster

    settings = common.infra_settings()
    with failures_as_exit(*_expected()):
        stopped = kafka_broker.down(settings)
        cluster = spark_cluster.down(settings)
        store = object_store.down(settings)
    console.print("broker stopped" if stopped else "broker was not running")
    if cluster:
        console.print("spark cluster stopped")
    if store:
        console.print("object store stopped")


@app.command()
def status(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
) -> None:
    """Show the broker, its topics, partitions, offsets, retention and cleanup policy."""
    from infra import kafka_broker

    settings = common.infra_settings()
    with failures_as_exit(*_expected()):
        current = kafka_broker.status(settings)
    if as_json:
        typer.echo(json.dumps(current.to_dict(), indent=2))
        return
    _print_status(current)
    _print_scale_out(settings)


def _print_scale_out(settings: Settings) -> None:
    """The Spark cluster and the object store, when ``lk infra up`` started them."""
    from infra import object_store, spark_cluster

    cluster = spark_cluster.status(settings)
    if cluster.running:
        console.print(
            f"spark cluster {cluster.master_url}: {cluster.alive_workers} workers "
            f"({cluster.cores} cores, {cluster.memory_mb} MiB), UI {cluster.ui}"
        )
    store = object_store.status(settings)
    if store.running:
        console.print(f"object store {store.endpoint}: buckets {', '.join(store.buckets)}")
