"""The entry point turns an absent broker, and every command the platform's own errors,
into one line that says what to check and an exit code; a bug keeps its traceback."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from kafka.errors import KafkaTimeoutError
from typer.testing import CliRunner

from config.errors import LkError
from lk.cli import app as cli
from tests.conftest import REPO

pytestmark = pytest.mark.unit


def _failing(error: BaseException):
    def run() -> None:
        raise error

    return run


def test_kafka_out_of_reach_is_a_message_and_exit_1(monkeypatch, capsys) -> None:
    monkeypatch.setattr(cli, "app", _failing(KafkaTimeoutError("Unable to bootstrap from x:1")))
    with pytest.raises(SystemExit) as exit_:
        cli.main()
    assert exit_.value.code == 1
    said = " ".join(capsys.readouterr().err.split())
    assert said.startswith("Kafka out of reach: KafkaTimeoutError: Unable to bootstrap from x:1.")
    assert "LK_KAFKA__BOOTSTRAP_SERVERS" in said


def test_any_other_failure_is_left_as_it_was(monkeypatch) -> None:
    monkeypatch.setattr(cli, "app", _failing(ValueError("a bug")))
    with pytest.raises(ValueError, match="a bug"):
        cli.main()


class StuckError(LkError):
    exit_code = 3
    label = "stuck"


def _stuck(*_, **__):
    raise StuckError("the [bold]lane[/bold] is stuck at offset 7")


@pytest.mark.parametrize(
    ("module", "args"), [("lk.cli.speed", ["status"]), ("lk.cli.kappa", ["kappa", "rollback"])]
)
def test_a_platform_error_is_one_line_and_its_exit_code(monkeypatch, module, args) -> None:
    monkeypatch.setattr(f"{module}.settings", _stuck)
    result = CliRunner().invoke(cli.app, args)
    assert result.exit_code == 3
    assert isinstance(result.exception, SystemExit)  # mapped, not escaped as the error
    assert " ".join(result.stderr.split()) == "stuck: the [bold]lane[/bold] is stuck at offset 7"
    assert "Traceback" not in result.output


def test_any_other_error_in_a_command_keeps_its_traceback(monkeypatch) -> None:
    monkeypatch.setattr("lk.cli.speed.settings", _failing(ValueError("a bug")))
    result = CliRunner().invoke(cli.app, ["status"])
    assert isinstance(result.exception, ValueError)
    assert result.exit_code == 1


def test_the_console_script_prints_a_config_error_without_a_traceback() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "lk.cli.app", "status"],
        env={**os.environ, "LK_MODE": "sigma", "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.startswith("config error:") and "mode" in done.stderr
    assert "Traceback" not in done.stderr + done.stdout
