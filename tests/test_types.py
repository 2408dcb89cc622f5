"""The packages type-check: mypy over what ``[tool.mypy]`` in pyproject.toml lists (every
package but the tests and the Airflow DAGs). ``make lint`` runs the same check; this test
is how CI (``make test``) runs it."""

from __future__ import annotations

import tomllib

import pytest
from mypy import api

from tests.conftest import REPO

pytestmark = pytest.mark.unit


def test_the_packages_type_check(monkeypatch):
    monkeypatch.chdir(REPO)  # the config's file list and cache are relative to the checkout
    out, err, status = api.run(["--config-file", str(REPO / "pyproject.toml")])
    assert status == 0, out + err
    assert out.startswith("Success: no issues found"), out


def test_every_package_is_in_the_check():
    """A new package is checked from its first commit: every folder of the checkout with
    an ``__init__.py`` is in ``[tool.mypy] files`` (the tests aside)."""
    files = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["mypy"]["files"]
    packages = {p.parent.name for p in REPO.glob("*/__init__.py")} - {"tests"}
    assert packages - set(files) == set()
