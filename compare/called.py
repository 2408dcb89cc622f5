"""Which platform code a design runs: the functions its process called, and their lines."""

from __future__ import annotations

import inspect
import sys
import threading
from pathlib import Path
from types import CodeType, FrameType
from typing import Any


class CalledFunctions:
    """Records each platform function this process calls, on every thread (a profile hook).

    One event per call, not one per line: the hook costs the Python side one check per
    call, and the JVM's work (most of a design's) nothing. Threads started after
    ``__enter__`` are hooked too (``foreachBatch`` runs on py4j's callback threads).
    Code under ``root`` counts, except the ``harness`` folders and the virtualenv.
    """

    def __init__(self, root: Path, harness: tuple[str, ...]) -> None:
        self._root = f"{root}/"
        self._skip = tuple(f"{self._root}{folder}" for folder in (*harness, ".venv/"))
        self._codes: set[CodeType] = set()

    def _hook(self, frame: FrameType, event: str, _: Any) -> None:
        if event == "call":
            path = frame.f_code.co_filename
            if path.startswith(self._root) and not path.startswith(self._skip):
                self._codes.add(frame.f_code)

    def __enter__(self) -> CalledFunctions:
        threading.setprofile(self._hook)
        sys.setprofile(self._hook)
        return self

    def __exit__(self, *_: object) -> None:
        sys.setprofile(None)
        threading.setprofile(None)

    def lines(self) -> dict[str, int]:
        """``module.function:line`` -> the lines of its body that hold code.

        A nested function's body is its own entry (Python compiles it apart), so no line
        counts twice; module and class bodies (imports, definitions, run by a lazy import)
        are not functions and are not counted.
        """
        out: dict[str, int] = {}
        for code in self._codes:
            if not code.co_flags & inspect.CO_OPTIMIZED:
                continue
            module = Path(code.co_filename).relative_to(self._root).with_suffix("")
            body = {line for *_, line in code.co_lines() if line and line != code.co_firstlineno}
            out[f"{'.'.join(module.parts)}.{code.co_qualname}:{code.co_firstlineno}"] = len(body)
        return dict(sorted(out.items()))
