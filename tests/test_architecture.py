"""The import graph is the architecture drawing: import-linter's contracts hold, and fail
when a layer reaches sideways (``pyproject.toml``, ``[tool.importlinter]``)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.unit
PACKAGES = (
    "config", "infra", "event_log", "workload", "measure", "views", "quality", "oracle", "lake",
    "batch_layer", "speed_layer", "serving_layer", "designs", "compare", "dashboard", "chaos",
    "lk",
)  # fmt: skip


def lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(Path(sys.executable).with_name("lint-imports")), "--no-cache"],
        cwd=root,
        env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=False,
    )


def test_the_layer_contracts_hold():
    result = lint_imports(REPO)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_a_sideways_import_breaks_them(tmp_path):
    for package in PACKAGES:
        shutil.copytree(REPO / package, tmp_path / package)
    shutil.copy(REPO / "pyproject.toml", tmp_path)
    speed = tmp_path / "speed_layer" / "micro_batch.py"
    speed.write_text(speed.read_text() + "\nfrom batch_layer.job import run_batch  # sideways\n")
    result = lint_imports(tmp_path)
    assert result.returncode == 1
    assert "speed_layer.micro_batch -> batch_layer.job" in result.stdout


def test_a_cycle_breaks_them(tmp_path):
    for package in PACKAGES:
        shutil.copytree(REPO / package, tmp_path / package)
    shutil.copy(REPO / "pyproject.toml", tmp_path)
    spark = tmp_path / "lake" / "spark.py"
    spark.write_text(spark.read_text() + "\nfrom lake import class_archive  # a cycle\n")
    result = lint_imports(tmp_path)
    assert result.returncode == 1
    assert "No import cycle" in result.stdout and "BROKEN" in result.stdout


def test_an_upward_import_breaks_them(tmp_path):
    for package in PACKAGES:
        shutil.copytree(REPO / package, tmp_path / package)
    shutil.copy(REPO / "pyproject.toml", tmp_path)
    tables = tmp_path / "lake" / "tables.py"
    tables.write_text(tables.read_text() + "\nfrom designs import platform  # upward\n")
    result = lint_imports(tmp_path)
    assert result.returncode == 1
    assert "lake.tables -> designs.platform" in result.stdout


def test_a_micro_batch_step_reaching_for_another_breaks_them(tmp_path):
    for package in PACKAGES:
        shutil.copytree(REPO / package, tmp_path / package)
    shutil.copy(REPO / "pyproject.toml", tmp_path)
    maintenance = tmp_path / "speed_layer" / "maintenance.py"
    maintenance.write_text(
        maintenance.read_text() + "\nfrom speed_layer.view_input import floor_to  # sideways\n"
    )
    result = lint_imports(tmp_path)
    assert result.returncode == 1
    assert "Inside speed_layer" in result.stdout
    assert "speed_layer.maintenance -> speed_layer.view_input" in result.stdout
