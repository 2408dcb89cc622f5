"""The core packages type-check: mypy over what ``[tool.mypy]`` in pyproject.toml lists
(the configuration, views, lake, log, both layers, serving, the designs). ``make lint``
runs the same check; this test is how CI (``make test``) runs it."""

from __future__ import annotations

import pytest
from mypy import api

from tests.conftest import REPO

pytestmark = pytest.mark.unit


def test_the_core_packages_type_check(monkeypatch):
    monkeypatch.chdir(REPO)  # the config's file list and cache are relative to the checkout
    out, err, status = api.run(["--config-file", str(REPO / "pyproject.toml")])
    assert status == 0, out + err
    assert out.startswith("Success: no issues found"), out
