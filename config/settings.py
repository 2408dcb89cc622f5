"""The platform's one typed configuration: a YAML file plus ``LK_*`` environment overrides.

Precedence, highest first: keyword arguments, environment (``LK_MODE=kappa``,
``LK_KAFKA__BOOTSTRAP_SERVERS=host:9092``, nested fields joined by ``__``), the YAML
file (``LK_CONFIG`` or ``./lk.yaml``), then the defaults below.
"""

from __future__ import annotations

import os
import re
from datetime import timedelta
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    SecretStr,
    ValidationError,
    field_validator,
)
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    YamlConfigSettingsSource,
)

from config.errors import LkError

Mode = Literal["lambda", "kappa"]
#: which catalog row a purchase joins with (docs/semantics.md, "Which catalog version")
CatalogJoin = Literal["current", "as_of_event_time"]


_UNITS = {
    "ms": 0.001,
    "millisecond": 0.001,  # what format_duration writes for a fraction of a second
    "s": 1,
    "sec": 1,
    "second": 1,
    "m": 60,
    "min": 60,
    "minute": 60,
    "h": 3600,
    "hour": 3600,
    "d": 86400,
    "day": 86400,
}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-z]+)\s*$")


def parse_duration(value: Any) -> Any:
    """Accept ``"10 minutes"``, ``"30m"``, ``"1h"``, ``"90s"`` as well as pydantic's forms."""
    if isinstance(value, str) and (match := _DURATION.match(value.lower())):
        number, unit = match.groups()
        unit = unit if unit in _UNITS else unit.removesuffix("s")
        if unit in _UNITS:
            return timedelta(seconds=float(number) * _UNITS[unit])
    return value


def format_duration(value: timedelta) -> str:
    """A Spark interval string for a duration (``"600 seconds"``, ``"1500 milliseconds"``)."""
    millis = round(value.total_seconds() * 1000)
    return f"{millis // 1000} seconds" if millis % 1000 == 0 else f"{millis} milliseconds"


Duration = Annotated[
    timedelta, BeforeValidator(parse_duration), PlainSerializer(format_duration, return_type=str)
]


class ConfigError(LkError, ValueError):
    """The configuration is invalid; the message names the offending field."""

    exit_code = 2
    label = "config error"


class _Section(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class KafkaSettings(_Section):
    """Where the log lives and how its topics are laid out."""

    bootstrap_servers: str = "127.0.0.1:9092"
    events_topic: str = "events"
    catalog_topic: str = "catalog"
    alerts_topic: str = Field(
        "alerts",
        description="compacted; purchase_bursts' alerts, one record per burst and change "
        "(docs/semantics.md, 'Alerts')",
    )
    alerts_every: Duration = Field(
        timedelta(seconds=10),
        description="a streaming lane publishes alerts at most this often (and when it stops); "
        "a batch run and a Kappa switch publish at once",
    )
    events_partitions: int = Field(4, ge=1)
    catalog_partitions: int = Field(1, ge=1)
    events_retention_ms: int = Field(-1, ge=-1, description="-1 keeps the log for good")
    replication_factor: int = Field(1, ge=1, description="replicas of each topic partition")
    min_insync_replicas: int = Field(
        1, ge=1, description="replicas that must have a record before acks=all acknowledges it"
    )
    producer_linger_ms: int = Field(20, ge=0)
    producer_batch_size: int = Field(256 * 1024, ge=1024)
    producer_compression: Literal["none", "gzip", "lz4", "zstd", "snappy"] = "gzip"
    spark_options: dict[str, str] = Field(
        default_factory=dict, description="extra options for Spark's Kafka source (kafka.*)"
    )


class BrokerSettings(_Section):
    """The local KRaft broker (or cluster of ``count`` nodes) that ``lk infra up`` runs."""

    count: int = Field(1, ge=1, le=9, description="nodes; node k uses port + 2(k-1)")
    home: Path = Path(".lk/kafka")
    jars_dir: Path = Path(".lk/jars/kafka")
    port: int = Field(9092, ge=1, le=65535)
    controller_port: int = Field(9093, ge=1, le=65535)
    heap: str = "512m"
    start_timeout_s: float = Field(90.0, gt=0)


class SparkSettings(_Section):
    """How sessions are built; any ``spark.*`` key in ``conf`` is passed through as-is."""

    master: str = "local[2]"
    app_name: str = "lk"
    shuffle_partitions: int = Field(4, ge=1)
    driver_memory: str = "2g"
    jars_dir: Path = Path(".lk/jars/spark")
    class_archive_dir: Path | None = Field(
        Path(".lk/cds"),
        description="where `lk infra fetch` keeps the driver JVM's class archive "
        "(faster starts); None: never build or use one",
    )
    log_dir: Path = Field(
        Path(".lk/logs"), description="where each driver JVM's console output goes"
    )
    ui_enabled: bool = False
    driver_gc: Literal["ParallelGC", "G1GC", "SerialGC", "ZGC"] = Field(
        "ParallelGC",
        description="the driver JVM's garbage collector (-XX:+Use<this>). Parallel spends "
        "the least CPU where a lane shares two cores with serving and the broker: with G1's "
        "concurrent marking and write barriers a live lane's median micro-batch was 16-35% "
        "longer here (docs/benchmarks.md)",
    )
    scheduler_pools: bool = Field(
        True,
        description="Spark's fair scheduler, a live lane's and serving's jobs in a pool of "
        "their own served first (lake/pools.py): where one driver also runs a recompute "
        "(lk compare's nightly batch run), it no longer holds every core while micro-batches "
        "wait; off: Spark's FIFO scheduler",
    )
    driver_java_options: list[str] = Field(
        default_factory=list,
        description="extra driver JVM flags (JIT, GC), after the platform's own",
    )
    conf: dict[str, str] = Field(default_factory=dict)
    python: str | None = Field(
        None,
        description="the Python executors run (spark.pyspark.python); None: this process's "
        "own interpreter, which a cluster on this machine shares",
    )
    executor_memory: str = Field("1g", description="per executor, on a cluster master")
    cluster_home: Path = Field(
        Path(".lk/spark"), description="where `lk infra up --spark-workers N` keeps its files"
    )
    master_port: int = Field(7077, ge=1, le=65535, description="the standalone master's port")
    master_ui_port: int = Field(
        8280, ge=1, le=65535, description="its web UI (Spark's 8080 is Airflow's)"
    )
    worker_ui_port: int = Field(
        8281, ge=1, le=65535, description="worker k's web UI listens on this + k - 1"
    )
    worker_cores: int = Field(1, ge=1, description="cores each local worker offers")
    worker_memory: str = Field("2g", description="memory each local worker offers")

    def is_cluster(self) -> bool:
        """Whether sessions run on a cluster master (``spark://``, ``yarn``, ``k8s://``)."""
        return not self.master.startswith("local")


class StorageSettings(_Section):
    """Root of every Delta table and checkpoint: a local path or any URI Delta supports.

    An ``s3a://bucket/prefix`` root reads and writes through Hadoop's S3A connector;
    ``endpoint`` and the keys point it at an S3-compatible server (``lk infra up
    --object-store`` runs one on 127.0.0.1 and generates its keys when none are set).
    """

    root: str = ".lk/data"
    endpoint: str | None = Field(
        None, description="S3 endpoint URL (http://127.0.0.1:8333); None: AWS's own"
    )
    access_key: SecretStr | None = None
    secret_key: SecretStr | None = None
    region: str = "us-east-1"
    path_style_access: bool = Field(
        True, description="bucket in the path, not the host name (what local servers need)"
    )
    jars_dir: Path = Field(Path(".lk/jars/s3"), description="the S3A connector's jars")
    server_home: Path = Field(
        Path(".lk/s3"), description="where `lk infra up --object-store` keeps its files"
    )
    server_port: int = Field(8333, ge=1, le=65535, description="the local server's S3 port")

    def uri(self) -> str:
        """The root as an absolute URI (local paths are resolved against the cwd)."""
        if "://" in self.root:
            return self.root.rstrip("/")
        return Path(self.root).resolve().as_uri().replace("file:///", "file:/", 1)

    def on_object_store(self) -> bool:
        """Whether the root is on S3 (or an S3-compatible server) through S3A."""
        return self.root.startswith("s3a://")

    def bucket(self) -> str | None:
        """The bucket of an ``s3a://`` root, else None."""
        if not self.on_object_store():
            return None
        return self.root.removeprefix("s3a://").split("/", 1)[0]


class StreamSettings(_Section):
    """Micro-batch pacing and backpressure for the speed layer and Kappa replay."""

    trigger_interval: str = "1 second"
    max_offsets_per_trigger: int = Field(200_000, ge=1)
    replay_max_offsets_per_trigger: int = Field(
        2_000_000,
        ge=1,
        description=(
            "about this many offsets per micro-batch while a Kappa version replays the log "
            "(split evenly, at most 1.5 times this): fewer, larger micro-batches "
            "(throughput over freshness), memory still bounded (a 5M micro-batch ran in "
            "a 2 GB driver, which then died in the switch's diff)"
        ),
    )
    compact_every: int = Field(
        10, ge=1, description="micro-batches between rewrites of a view's state, merged"
    )
    dedup_horizon: Duration | None = Field(
        None,
        description=(
            "unset (the contract): re-sends are dropped however far apart, the lane holding "
            "every event id it read; set: ids are held this long in Kafka append time, and "
            "records behind that watermark are dropped and counted (watermark_drops), which "
            "a Kappa replay refuses"
        ),
    )
    log_retention: Duration = Field(
        timedelta(hours=1),
        description=(
            "how long a lane's log keeps the data files a commit replaced, and its old "
            "commits (a recovery goes back one micro-batch; a serving reload reads a version "
            "for seconds); Delta deletes expired commit files at a checkpoint, a day at a time"
        ),
    )
    tidy_every: int = Field(
        600,
        ge=1,
        description=(
            "micro-batches between tidy-ups of a lane's log: the small files of its "
            "append-only parts merged, then files no version within log_retention needs "
            "deleted (VACUUM)"
        ),
    )
    log_outage: Duration = Field(
        timedelta(minutes=5),
        description=(
            "how long a lane restarts from its checkpoint while Kafka is out of reach "
            "before it fails; a micro-batch committed in between starts the clock again"
        ),
    )


class RuleSettings(_Section):
    """An extra validation rule of your events.

    Records for which ``check`` (Spark SQL) is not true are quarantined with ``reason``.
    """

    reason: str
    check: str


class EventSettings(_Section):
    """Your own event contract; left empty, the built-in online-shop events.

    Give the fields as a Spark DDL string (``ddl``) or a file (``schema_file``: a JSON
    Schema ``.json``, else DDL text), and name the id, time and key fields.
    """

    ddl: str | None = None
    schema_file: Path | None = None
    id_field: str | None = None
    time_field: str | None = None
    time_format: str | None = Field(
        None,
        description=(
            "Spark datetime pattern of a text time field (e.g. yyyy-MM-dd HH:mm:ss); "
            "None: ISO-8601. A numeric time field: epoch_seconds or epoch_millis"
        ),
    )
    key_field: str | None = None
    rules: tuple[RuleSettings, ...] = ()

    @property
    def is_custom(self) -> bool:
        """Whether a schema is configured (else the built-in shop contract applies)."""
        return self.ddl is not None or self.schema_file is not None


class ViewSettings(_Section):
    """Which views are registered, and the window sizes, gaps and lateness of the built-in ones.

    ``module`` is an importable module name or a ``.py`` file that registers views
    (``views.base.View``); ``keep_built_in`` names built-in views to keep beside them
    (None: as the module's ``KEEP_BUILT_IN`` says, else none).
    """

    module: str = "views.builtin"
    keep_built_in: tuple[str, ...] | None = None

    tumbling_window: Duration = timedelta(minutes=1)
    hop_window: Duration = timedelta(minutes=10)
    hop_slide: Duration = timedelta(minutes=1)
    session_gap: Duration = timedelta(minutes=30)
    conversion_lookback: Duration = timedelta(minutes=60)
    conversion_window: Duration = timedelta(minutes=1)
    hll_lg_k: int = Field(12, ge=4, le=21)
    burst_window: Duration = Field(
        timedelta(minutes=5), description="purchase_bursts: the sliding interval"
    )
    burst_threshold: int = Field(
        3, ge=1, description="purchase_bursts: purchases within one interval that make a burst"
    )
    allowed_lateness: dict[str, Duration] = Field(
        default_factory=dict, description="per view; a view not named here allows 10 minutes"
    )
    catalog_join: dict[str, CatalogJoin] = Field(
        default_factory=dict,
        description="per view joining the catalog: 'current' (the catalog as it stands when "
        "a layer computes; the default) or 'as_of_event_time' (the version valid at the "
        "event's time)",
    )
    options: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description="per view: settings your own view module reads (``option``), e.g. "
        "``{site_temperature: {window: 5 minutes}}``; ``lk compare --change VIEW.SETTING=VALUE`` "
        "changes one",
    )

    @field_validator("hop_slide")
    @classmethod
    def _slide_divides_window(cls, slide: timedelta, info: Any) -> timedelta:
        window = info.data.get("hop_window")
        if window is not None and (slide <= timedelta(0) or window % slide):
            raise ValueError("hop_slide must be positive and divide hop_window")
        return slide

    def lateness(self, view: str) -> timedelta:
        """Allowed lateness of one view (10 minutes unless configured)."""
        return self.allowed_lateness.get(view, timedelta(minutes=10))

    def join_rule(self, view: str) -> CatalogJoin:
        """Which catalog version ``view`` joins a purchase with (``current`` unless set)."""
        return self.catalog_join.get(view, "current")

    def option(self, view: str, name: str, default: Any) -> Any:
        """One setting of your own view (``options``), or ``default`` when not configured."""
        return self.options.get(view, {}).get(name, default)


class ServingSettings(_Section):
    """The HTTP read API (``lk serve``): where it listens, how often it looks for new data."""

    host: str = "127.0.0.1"
    port: int = Field(8000, ge=1, le=65535)
    refresh_interval: Duration = Field(
        timedelta(seconds=0.1),
        description="how often the served views look for a new table version: a probe of "
        "each table's Delta log (a directory listing, no Spark job); a commit waits half of "
        "this for it on average before its reload starts. On an object store each probe is "
        "a LIST request per table: set it longer there if requests cost",
    )
    idle_after: Duration = Field(
        timedelta(minutes=10),
        description="a view nobody asked for in this long is not reloaded as its table "
        "moves (a reload is a Spark job beside the lane's); the next request for it waits "
        "for one reload",
    )
    merge_appends: bool = Field(
        True,
        description="a reload reads only the files the lane's commits appended to a view "
        "since the last reload and merges them onto the view's state that reload kept "
        "(exact: docs/architecture.md); off, every reload reads the view whole",
    )


class QualitySettings(_Section):
    """Thresholds of the batch layer's Great Expectations checks that are a matter of policy."""

    max_quarantined_fraction: float = Field(
        1.0,
        ge=0.0,
        le=1.0,
        description=(
            "share of the records a batch run lands that may be malformed (quarantined) "
            "before the run is refused; 1.0 accepts any share"
        ),
    )


class WatchdogSettings(_Section):
    """What ``speed_layer_watchdog`` tolerates from the long-running ``lk speed``."""

    home: Path = Path(".lk/speed")
    max_lag: int = Field(
        100_000, ge=0, description="consumer lag (offsets) the streaming job may fall behind"
    )
    lag_grace: Duration = timedelta(seconds=60)
    heartbeat_timeout: Duration = timedelta(minutes=5)


def _default_dags_folder() -> Path:
    return Path(__file__).resolve().parents[1] / "dags"


class AirflowSettings(_Section):
    """The local Airflow 3 that ``lk airflow up`` runs: where, on which ports, which DAGs."""

    home: Path = Path(".lk/airflow")
    dags_folder: Path = Field(default_factory=_default_dags_folder)
    port: int = Field(8080, ge=1, le=65535)
    worker_log_port: int = Field(8793, ge=1, le=65535)
    trigger_log_port: int = Field(8794, ge=1, le=65535)
    user: str = "admin"
    password: SecretStr | None = Field(
        None, description="the UI/API password; generated once into the home if unset"
    )
    start_timeout_s: float = Field(240.0, gt=0)
    nightly_schedule: str | None = "@daily"
    watchdog_schedule: str | None = "*/5 * * * *"

    @field_validator("nightly_schedule", "watchdog_schedule", mode="before")
    @classmethod
    def _none_means_manual(cls, value: Any) -> Any:
        return None if isinstance(value, str) and value.lower() in ("", "none", "manual") else value


class Settings(BaseSettings):
    """Everything the platform reads at start; ``mode`` picks the wiring."""

    model_config = SettingsConfigDict(
        env_prefix="LK_", env_nested_delimiter="__", frozen=True, extra="forbid"
    )

    mode: Mode = "lambda"
    events: EventSettings = EventSettings()
    kafka: KafkaSettings = KafkaSettings()
    broker: BrokerSettings = BrokerSettings()
    spark: SparkSettings = SparkSettings()
    storage: StorageSettings = StorageSettings()
    stream: StreamSettings = StreamSettings()
    views: ViewSettings = ViewSettings()
    serving: ServingSettings = ServingSettings()
    quality: QualitySettings = QualitySettings()
    watchdog: WatchdogSettings = WatchdogSettings()
    airflow: AirflowSettings = AirflowSettings()

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Keyword arguments, then ``LK_*`` variables, then the YAML file."""
        yaml_file = settings_cls.model_config.get("yaml_file")
        return (init_settings, env_settings, YamlConfigSettingsSource(settings_cls, yaml_file))


def config_path() -> Path | None:
    """The YAML file in force: ``$LK_CONFIG``, else ``./lk.yaml`` if present."""
    if env := os.environ.get("LK_CONFIG"):
        return Path(env)
    local = Path("lk.yaml")
    return local if local.exists() else None


def load_settings(path: Path | str | None = None, **overrides: Any) -> Settings:
    """Load and validate the configuration; raise ``ConfigError`` naming each bad field."""
    path = Path(path) if path else config_path()
    if path is not None and not path.exists():
        raise ConfigError(f"config file {path} does not exist")
    sources = type(
        "Settings", (Settings,), {"model_config": {**Settings.model_config, "yaml_file": path}}
    )
    try:
        return sources(**overrides)
    except ValidationError as err:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or '<root>'}: {e['msg']}" for e in err.errors()
        )
        raise ConfigError(f"invalid configuration ({path or 'defaults'}): {problems}") from None


def with_sections(settings: Settings, **sections: dict[str, Any]) -> Settings:
    """A copy of frozen ``settings`` with fields of nested sections changed (``kafka={...}``).

    Each changed section is validated again, so ``{"root": "/data"}`` becomes the ``Path``
    the field declares and a bad value is refused here, not where it is used.
    """
    update = {
        name: (section := getattr(settings, name)).model_validate(
            {**section.model_dump(), **fields}
        )
        for name, fields in sections.items()
    }
    return settings.model_copy(update=update)
