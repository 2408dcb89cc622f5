"""Run a local Airflow 3 (API server, scheduler, DAG processor, triggerer) beside the broker.

Everything lives under ``settings.airflow.home``::

    airflow.db          SQLite metadata (migrated on every ``up``: a no-op once current)
    secrets.json        fernet / JWT / API secrets, made once so every process agrees
    passwords.json      the simple auth manager's user -> password file
    pids/<component>.pid, logs/<component>.out

Each component is its own process group (``start_new_session``), so ``down`` can stop
it with everything it forked (executor workers, task supervisors). Every setting goes
through ``AIRFLOW__*`` environment variables rather than ``airflow.cfg``: the values
follow ``lk.yaml``/``LK_*`` on each ``up`` and nothing is left to a stale file.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import secrets
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from contextlib import suppress
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from config.errors import LkError
from config.settings import Settings, config_path
from infra import processes

log = logging.getLogger(__name__)

HOST = "127.0.0.1"
COMPONENTS = ("api-server", "scheduler", "dag-processor", "triggerer")
#: The DAGs this project ships; ``status`` reports their last runs.
DAG_IDS = ("lambda_nightly", "speed_layer_watchdog", "kappa_reprocess", "compare_architectures")
STOP_TIMEOUT_S = 30.0
#: The health endpoint names the components it tracks by these keys.
_HEALTH_KEYS = ("metadatabase", "scheduler", "triggerer", "dag_processor")


class AirflowError(LkError, RuntimeError):
    """Airflow could not be started, reached or stopped; the message says why."""


@dataclass(frozen=True)
class ProcessStatus:
    """One Airflow component process started by ``up``."""

    component: str
    pid: int | None
    running: bool


@dataclass(frozen=True)
class AirflowStatus:
    """The local Airflow: its processes, API health and the project DAGs' last runs."""

    url: str
    home: str
    processes: list[ProcessStatus]
    health: dict[str, str] = field(default_factory=dict)
    last_runs: dict[str, dict[str, Any] | None] = field(default_factory=dict)

    @property
    def running(self) -> bool:
        """True when every component process is alive."""
        return all(p.running for p in self.processes)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {**asdict(self), "running": self.running}


@dataclass(frozen=True)
class _Paths:
    home: Path

    @property
    def db(self) -> Path:
        return self.home / "airflow.db"

    @property
    def secrets(self) -> Path:
        return self.home / "secrets.json"

    @property
    def passwords(self) -> Path:
        return self.home / "passwords.json"

    @property
    def migrate_log(self) -> Path:
        return self.home / "logs" / "db-migrate.out"

    def pid(self, component: str) -> Path:
        return self.home / "pids" / f"{component}.pid"

    def out(self, component: str) -> Path:
        return self.home / "logs" / f"{component}.out"


def _paths(settings: Settings) -> _Paths:
    return _Paths(settings.airflow.home.resolve())


def url(settings: Settings) -> str:
    """The UI and REST API address."""
    return f"http://{HOST}:{settings.airflow.port}"


def _secrets(paths: _Paths) -> dict[str, str]:
    """Fernet key, JWT secret and API secret: made once, shared by every component."""
    if paths.secrets.exists():
        return json.loads(paths.secrets.read_text())
    values = {
        "fernet_key": base64.urlsafe_b64encode(os.urandom(32)).decode(),
        "jwt_secret": secrets.token_urlsafe(32),
        "api_secret": secrets.token_urlsafe(32),
    }
    paths.secrets.write_text(json.dumps(values))
    paths.secrets.chmod(0o600)
    return values


def credentials(settings: Settings) -> tuple[str, str]:
    """The UI/API login: the configured password, else the one kept in ``passwords.json``.

    The simple auth manager only generates passwords for users missing from its file,
    so writing the file first gives a password that ``up`` can print and tests can use.
    """
    paths = _paths(settings)
    user = settings.airflow.user
    stored = json.loads(paths.passwords.read_text()) if paths.passwords.exists() else {}
    configured = settings.airflow.password
    password = configured.get_secret_value() if configured else stored.get(user)
    if password is None:
        password = secrets.token_urlsafe(12)
    if stored.get(user) != password:
        paths.home.mkdir(parents=True, exist_ok=True)
        paths.passwords.write_text(json.dumps({**stored, user: password}) + "\n")
        paths.passwords.chmod(0o600)
    return user, password


def airflow_env(settings: Settings) -> dict[str, str]:
    """The environment of every Airflow process: this one's (``LK_*`` included) + Airflow's.

    The task processes inherit it, so the DAGs' tasks load the same ``lk`` settings as
    the command that ran ``lk airflow up`` (``LK_CONFIG`` is made absolute for that).
    """
    paths = _paths(settings)
    keys = _secrets(paths)
    base = url(settings)
    # Inherited AIRFLOW* variables are dropped (a shell's or a test's Airflow setup,
    # e.g. unit-test mode, must not leak in): this Airflow is configured from lk's settings.
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")}
    if (config := config_path()) is not None:
        env["LK_CONFIG"] = str(config.resolve())
    env.update(
        {
            "AIRFLOW_HOME": str(paths.home),
            "AIRFLOW__CORE__DAGS_FOLDER": str(settings.airflow.dags_folder.resolve()),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
            # Two cores: the tasks start Spark sessions; one at a time is what fits.
            "AIRFLOW__CORE__PARALLELISM": "2",
            "AIRFLOW__CORE__FERNET_KEY": keys["fernet_key"],
            "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"{base}/execution/",
            "AIRFLOW__CORE__AUTH_MANAGER": (
                "airflow.api_fastapi.auth.managers.simple.simple_auth_manager.SimpleAuthManager"
            ),
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": f"{settings.airflow.user}:admin",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(paths.passwords),
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{paths.db}",
            "AIRFLOW__API__HOST": HOST,
            "AIRFLOW__API__PORT": str(settings.airflow.port),
            "AIRFLOW__API__BASE_URL": base,
            "AIRFLOW__API__WORKERS": "1",
            "AIRFLOW__API__SECRET_KEY": keys["api_secret"],
            "AIRFLOW__API_AUTH__JWT_SECRET": keys["jwt_secret"],
            "AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT": str(settings.airflow.worker_log_port),
            "AIRFLOW__LOGGING__TRIGGER_LOG_SERVER_PORT": str(settings.airflow.trigger_log_port),
            "AIRFLOW__SCHEDULER__ENABLE_HEALTH_CHECK": "False",
            # New DAG files show up within 30 s instead of the default 5 minutes.
            "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "30",
            "GX_ANALYTICS_ENABLED": "false",
            "NO_COLOR": "1",
        }
    )
    return env


def _command(settings: Settings, component: str) -> list[str]:
    cmd = [sys.executable, "-m", "airflow", component]
    if component == "api-server":
        cmd += ["--host", HOST, "--port", str(settings.airflow.port), "--workers", "1"]
    return cmd


def _read_pid(paths: _Paths, component: str) -> int | None:
    """The PID of a running component; a stale PID file is removed."""
    return processes.read_pid(paths.pid(component))


def _migrate(settings: Settings, paths: _Paths, env: dict[str, str]) -> None:
    """``airflow db migrate``: creates the SQLite schema, or does nothing if it is current."""
    log.info("migrating the Airflow metadata DB %s", paths.db)
    with paths.migrate_log.open("wb") as out:
        done = subprocess.run(
            [sys.executable, "-m", "airflow", "db", "migrate"],
            env=env,
            cwd=Path.cwd(),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            check=False,
        )
    if done.returncode != 0:
        output = processes.tail(paths.migrate_log) or "(no output)"
        raise AirflowError(f"`airflow db migrate` failed (exit {done.returncode}):\n{output}")


def _start(settings: Settings, paths: _Paths, component: str, env: dict[str, str]) -> int:
    with paths.out(component).open("ab") as out:
        proc = subprocess.Popen(
            _command(settings, component),
            env=env,
            cwd=Path.cwd(),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    processes.write_pid(paths.pid(component), proc.pid)
    log.info("started airflow %s (pid %s)", component, proc.pid)
    return proc.pid


def health(settings: Settings, timeout_s: float = 3.0) -> dict[str, str]:
    """Per component, what ``/api/v2/monitor/health`` says (empty if the API does not answer)."""
    try:
        with urllib.request.urlopen(
            f"{url(settings)}/api/v2/monitor/health", timeout=timeout_s
        ) as response:
            body = json.loads(response.read())
    except (OSError, ValueError):
        return {}
    return {key: (body.get(key) or {}).get("status") or "unknown" for key in _HEALTH_KEYS}


def _wait_healthy(settings: Settings, paths: _Paths) -> None:
    deadline = time.monotonic() + settings.airflow.start_timeout_s
    current: dict[str, str] = {}
    while time.monotonic() < deadline:
        for component in COMPONENTS:
            if _read_pid(paths, component) is None:
                output = processes.tail(paths.out(component))
                raise AirflowError(f"airflow {component} exited while starting:\n{output}")
        current = health(settings)
        if current and all(value == "healthy" for value in current.values()):
            return
        time.sleep(2.0)
    raise AirflowError(
        f"Airflow at {url(settings)} was not healthy within "
        f"{settings.airflow.start_timeout_s:.0f} s (health: {current or 'no answer'}); "
        "`lk airflow down` stops what started"
    )


def up(settings: Settings) -> AirflowStatus:
    """Start every component that is not running, wait until all are healthy.

    Idempotent: running components are left alone (a dead one is started again).

    Raises:
        AirflowError: the metadata DB could not be migrated, a component exited while
            starting, or the API did not report every component healthy in time.
    """
    paths = _paths(settings)
    for folder in (paths.home, paths.home / "pids", paths.home / "logs"):
        folder.mkdir(parents=True, exist_ok=True)
    credentials(settings)
    env = airflow_env(settings)
    missing = [c for c in COMPONENTS if _read_pid(paths, c) is None]
    if missing:
        _migrate(settings, paths, env)
        for component in missing:
            _start(settings, paths, component, env)
    _wait_healthy(settings, paths)
    return status(settings)


def _descendants(pid: int) -> set[int]:
    """Every live process below ``pid`` (children that left its process group included)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry.name))
    found: set[int] = set()
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def _signal_all(pgid: int, pids: set[int], sig: signal.Signals) -> None:
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)
    for pid in pids:
        with suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def _wait_gone(pids: set[int], timeout_s: float) -> set[int]:
    """Wait until the processes exit; return the ones still alive after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while (alive := {p for p in pids if processes.alive(p)}) and time.monotonic() < deadline:
        time.sleep(0.2)
    return alive


def _stop(paths: _Paths, component: str, timeout_s: float) -> list[int]:
    """Stop a component with everything it forked; return the PIDs that were running.

    The main process gets SIGTERM first and the time to stop its own children (the
    scheduler waits for its executor workers); whatever remains of its process group
    and descendants then gets SIGTERM, and SIGKILL after ``timeout_s``.
    """
    pid = _read_pid(paths, component)
    if pid is None:
        return []
    pids = {pid} | _descendants(pid)
    log.info("stopping airflow %s (pid %s, %d processes)", component, pid, len(pids))
    with suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    _wait_gone({pid}, timeout_s / 2)
    pids |= _descendants(pid)
    _signal_all(pid, {p for p in pids if processes.alive(p)}, signal.SIGTERM)
    if survivors := _wait_gone(pids, timeout_s / 2):
        log.warning("airflow %s: killing %s", component, sorted(survivors))
        _signal_all(pid, survivors, signal.SIGKILL)
        _wait_gone(survivors, 10.0)
    paths.pid(component).unlink(missing_ok=True)
    return sorted(pids)


def down(settings: Settings, timeout_s: float = STOP_TIMEOUT_S) -> list[int]:
    """Stop every component ``up`` started (scheduler first, API server last).

    Returns:
        The PIDs that were stopped (empty if nothing was running).
    """
    paths = _paths(settings)
    stopped: list[int] = []
    for component in ("scheduler", "triggerer", "dag-processor", "api-server"):
        stopped += _stop(paths, component, timeout_s)
    return stopped


class Client:
    """A minimal client of Airflow's REST API v2 with a JWT from the simple auth manager."""

    def __init__(self, settings: Settings, timeout_s: float = 30.0) -> None:
        self.base = url(settings)
        self.timeout_s = timeout_s
        user, password = credentials(settings)
        token = self._call("POST", "/auth/token", {"username": user, "password": password})
        self.token: str = token["access_token"]

    def _call(self, method: str, path: str, body: dict | None = None) -> dict[str, Any]:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if getattr(self, "token", None):
            headers["Authorization"] = f"Bearer {self.token}"
        request = urllib.request.Request(
            self.base + path,
            data=None if body is None else json.dumps(body).encode(),
            headers=headers,
            method=method,
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                text = response.read()
        except urllib.error.HTTPError as err:
            detail = err.read().decode(errors="replace")[:500]
            raise AirflowError(f"{method} {path}: HTTP {err.code}: {detail}") from None
        return json.loads(text) if text else {}

    def get(self, path: str) -> dict[str, Any]:
        """GET ``/api/v2<path>``."""
        return self._call("GET", f"/api/v2{path}")

    def post(self, path: str, body: dict) -> dict[str, Any]:
        """POST ``/api/v2<path>``."""
        return self._call("POST", f"/api/v2{path}", body)

    def patch(self, path: str, body: dict) -> dict[str, Any]:
        """PATCH ``/api/v2<path>``."""
        return self._call("PATCH", f"/api/v2{path}", body)

    def last_run(self, dag_id: str) -> dict[str, Any] | None:
        """The DAG's newest run (id, state, dates), or None if it never ran or is unknown."""
        try:
            runs = self.get(f"/dags/{dag_id}/dagRuns?order_by=-run_after&limit=1")
        except AirflowError:
            return None
        found = runs.get("dag_runs") or []
        if not found:
            return None
        run = found[0]
        keys = ("dag_run_id", "state", "run_type", "start_date", "end_date")
        return {key: run.get(key) for key in keys}

    def trigger(self, dag_id: str, conf: dict | None = None) -> str:
        """Trigger a run now; returns its run id."""
        run = self.post(f"/dags/{dag_id}/dagRuns", {"logical_date": None, "conf": conf or {}})
        return run["dag_run_id"]

    def unpause(self, dag_id: str) -> None:
        """Let the scheduler run the DAG (DAGs start paused)."""
        self.patch(f"/dags/{dag_id}", {"is_paused": False})

    def run_state(self, dag_id: str, run_id: str) -> str:
        """The state of one run: queued, running, success or failed."""
        return self.get(f"/dags/{dag_id}/dagRuns/{run_id}")["state"]

    def task_states(self, dag_id: str, run_id: str) -> dict[str, str | None]:
        """Per task id, its state in one run."""
        found = self.get(f"/dags/{dag_id}/dagRuns/{run_id}/taskInstances")
        return {ti["task_id"]: ti.get("state") for ti in found.get("task_instances", [])}


def status(settings: Settings) -> AirflowStatus:
    """Each component's process, the API's health view, and each project DAG's last run."""
    paths = _paths(settings)
    processes = []
    for component in COMPONENTS:
        pid = _read_pid(paths, component)
        processes.append(ProcessStatus(component, pid, pid is not None))
    current = health(settings) if processes[0].running else {}
    last_runs: dict[str, dict[str, Any] | None] = {}
    if current:
        try:
            client = Client(settings)
            last_runs = {dag_id: client.last_run(dag_id) for dag_id in DAG_IDS}
        except (AirflowError, OSError) as err:
            log.warning("could not read the DAG runs: %s", err)
    return AirflowStatus(
        url=url(settings),
        home=str(paths.home),
        processes=processes,
        health=current,
        last_runs=last_runs,
    )
