"""Every error class the platform defines derives from ``LkError``, so ``lk`` maps it."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import tomllib

import pytest

from config.errors import LkError
from tests.conftest import REPO

pytestmark = pytest.mark.unit


def _packages() -> list[str]:
    """The platform's top-level packages: the roots the import contracts already list."""
    with (REPO / "pyproject.toml").open("rb") as file:
        return tomllib.load(file)["tool"]["importlinter"]["root_packages"]


def _error_classes() -> dict[str, type[BaseException]]:
    """Every exception class defined at module level anywhere in the platform's packages."""
    found: dict[str, type[BaseException]] = {}
    for root in _packages():
        package = importlib.import_module(root)
        for info in pkgutil.walk_packages(package.__path__, f"{root}."):
            module = importlib.import_module(info.name)
            for name, cls in inspect.getmembers(module, inspect.isclass):
                if cls.__module__ == module.__name__ and issubclass(cls, BaseException):
                    found[f"{module.__name__}.{name}"] = cls
    return found


def _outside(found: dict[str, type[BaseException]]) -> list[str]:
    return sorted(name for name, cls in found.items() if not issubclass(cls, LkError))


def test_every_error_class_of_the_platform_derives_from_lk_error():
    found = _error_classes()
    assert _outside(found) == []
    # the walk reached the packages (a walk that found nothing would pass vacuously)
    for name in (
        "config.settings.ConfigError",
        "designs.kappa.reprocess.TruncatedLogError",
        "lk.detached.AlreadyRunningError",
        "views.registry.UnknownViewError",
    ):
        assert name in found


def test_a_bare_runtime_error_subclass_is_caught(monkeypatch):
    import chaos.procs

    class StrayError(RuntimeError):
        pass

    StrayError.__module__ = "chaos.procs"
    monkeypatch.setattr(chaos.procs, "StrayError", StrayError, raising=False)
    assert _outside(_error_classes()) == ["chaos.procs.StrayError"]


def test_the_platforms_errors_keep_their_built_in_bases_and_exit_codes():
    from config.settings import ConfigError
    from infra.jars import MissingJarsError
    from views.registry import UnknownViewError

    assert issubclass(ConfigError, ValueError) and ConfigError.exit_code == 2
    assert issubclass(MissingJarsError, RuntimeError) and MissingJarsError.exit_code == 2
    assert issubclass(UnknownViewError, KeyError) and UnknownViewError.exit_code == 1
