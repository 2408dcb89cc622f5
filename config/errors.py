"""The base of the platform's own errors, so the command line maps them in one place.

Every error class the platform defines derives from :class:`LkError` (most keep a
built-in base as well, ``ValueError`` or ``RuntimeError``, so existing ``except`` clauses
still hold). ``lk`` turns any of them into one red line and the class's exit code,
without a traceback; anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

from typing import ClassVar


class LkError(Exception):
    """An expected failure a user can act on: its message says what and where.

    Attributes:
        exit_code: What ``lk`` exits with (1: the operation failed; 2: the configuration,
            set-up or arguments are wrong and nothing was attempted).
        label: The words ``lk`` prints before the message.
    """

    exit_code: ClassVar[int] = 1
    label: ClassVar[str] = "error"
