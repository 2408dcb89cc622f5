"""The view registry: the views of one event contract, looked up by name.

There is one registry per platform; the built-in shop views and a user's view module
register into it the same way (:mod:`views.loader`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from config.errors import LkError
from event_log.contract import EventContract
from event_log.schema import SHOP
from views.base import View


class UnknownViewError(LkError, KeyError):
    """No view is registered under that name."""


class RegistrationError(LkError, ValueError):
    """A view the registry refuses; the message names the view and where it was defined."""


class DuplicateViewError(RegistrationError):
    """Two views were registered under one name."""


class ViewNameError(RegistrationError):
    """A view's name cannot name what keeps it: a column, a partition, an HTTP path."""


NAME = re.compile(r"[a-z][a-z0-9_]*")
"""A view's name: its struct column and ``part`` value in the tables that keep views, a
path in ``lk serve``'s API. Lower case, as Spark matches column names in any case."""

RESERVED = frozenset({"part", "late", "quarantine", "retained", "context", "progress"})
"""Names the tables that keep views take for columns of their own: ``part``
(:data:`lake.source.PART`) and the other kinds of rows a lane's log holds
(:mod:`speed_layer.lane_log`)."""


class ViewRegistry:
    """An ordered name -> View mapping over one event contract; a taken name is an error.

    Attributes:
        contract: the events every registered view reads (decoded by every layer with it).
    """

    def __init__(self, views: Iterable[View] = (), contract: EventContract = SHOP) -> None:
        self.contract = contract
        self._views: dict[str, View] = {}
        self.checked = False  # set by views.loader.check_views once Spark accepted them
        for view in views:
            self.register(view)

    def register(self, view: View) -> View:
        """Add a view (usable as a decorator-free call in user code); returns it.

        Raises:
            ViewNameError: the name is not lower-case letters, digits and underscores
                starting with a letter, or is one of :data:`RESERVED`.
            DuplicateViewError: a view of that name is registered already.
        """
        if not NAME.fullmatch(view.name):
            raise ViewNameError(
                f"view {view.name!r} ({defined_in(view)}): a view's name becomes a column, a "
                "partition and an HTTP path, so it is lower-case letters, digits and "
                "underscores, starting with a letter"
            )
        if view.name in RESERVED:
            raise ViewNameError(
                f"view {view.name!r} ({defined_in(view)}): the tables that keep views use that "
                f"name for a column of their own (reserved: {', '.join(sorted(RESERVED))})"
            )
        if view.name in self._views:
            raise DuplicateViewError(
                f"two views are named {view.name!r}: {defined_in(self._views[view.name])} and "
                f"{defined_in(view)}"
            )
        self._views[view.name] = view
        return view

    def get(self, name: str) -> View:
        """The view called ``name``."""
        try:
            return self._views[name]
        except KeyError:
            known = ", ".join(self._views)
            raise UnknownViewError(f"no view named {name!r}; known views: {known}") from None

    def names(self) -> list[str]:
        """Registered names, in registration order."""
        return list(self._views)

    def __iter__(self) -> Iterator[View]:
        return iter(self._views.values())

    def __len__(self) -> int:
        return len(self._views)


def defined_in(view: View) -> str:
    """Where ``view`` was defined: its compute function's file and line (or module)."""
    import contextlib
    import inspect
    import os

    try:
        path = inspect.getsourcefile(view.compute) or view.compute.__module__
        line = inspect.getsourcelines(view.compute)[1]
    except (TypeError, OSError):
        return getattr(view.compute, "__module__", "?")
    with contextlib.suppress(ValueError):  # another drive (Windows)
        path = os.path.relpath(path)
    return f"{path}:{line}"


def _built_in() -> tuple[View, ...]:
    from views.builtin import VIEWS

    return tuple(VIEWS)


BUILT_IN: tuple[View, ...] = _built_in()


def default_registry() -> ViewRegistry:
    """A fresh registry holding the five built-in views over the shop contract."""
    return ViewRegistry(BUILT_IN, SHOP)
