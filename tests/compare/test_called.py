"""The code a design ran: the platform functions its process called, on every thread."""

from __future__ import annotations

import importlib
import sys
import threading
from pathlib import Path

import pytest

from compare.called import CalledFunctions

pytestmark = pytest.mark.unit

MODULE = """\
def used(x):
    y = x + 1
    return y


def unused():
    return 0


def outer():
    def inner():
        return 1

    return inner()
"""


LAZY = """\
SIZE = 3


class Thing:
    def size(self):
        return SIZE
"""


def test_records_the_functions_called_on_every_thread_and_their_lines(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "called_mod.py").write_text(MODULE)
    (tmp_path / "pkg" / "lazy.py").write_text(LAZY)
    (tmp_path / "harness").mkdir()
    (tmp_path / "harness" / "checks.py").write_text("def check():\n    return True\n")
    sys.path.insert(0, str(tmp_path))
    try:
        module = importlib.import_module("pkg.called_mod")
        checks = importlib.import_module("harness.checks")
        with CalledFunctions(tmp_path, ("harness/",)) as called:
            worker = threading.Thread(target=module.used, args=(1,))
            worker.start()
            worker.join()
            module.outer()
            checks.check()
            importlib.import_module("pkg.lazy").Thing().size()
        module.used(2)  # after the hook is gone: not recorded again, nothing new
    finally:
        sys.path.remove(str(tmp_path))
        for name in ("pkg.called_mod", "pkg.lazy", "pkg", "harness.checks", "harness"):
            sys.modules.pop(name, None)

    assert called.lines() == {
        "pkg.called_mod.used:1": 2,
        "pkg.called_mod.outer:10": 2,
        "pkg.called_mod.outer.<locals>.inner:11": 1,
        "pkg.lazy.Thing.size:5": 1,  # its module's and class's bodies ran, but are no function
    }
