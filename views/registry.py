"""The view registry: built-in views and the ones users register, looked up by name."""

from __future__ import annotations

from collections.abc import Iterable

from views import cart_state, conversions, events_by_type, revenue_by_category, user_sessions
from views.base import View


class UnknownViewError(KeyError):
    """No view is registered under that name."""


class ViewRegistry:
    """An ordered name -> View mapping; registering a taken name is an error."""

    def __init__(self, views: Iterable[View] = ()) -> None:
        self._views: dict[str, View] = {}
        for view in views:
            self.register(view)

    def register(self, view: View) -> View:
        """Add a view (usable as a decorator-free call in user code); returns it."""
        if view.name in self._views:
            raise ValueError(f"a view named {view.name!r} is already registered")
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

    def __iter__(self):
        return iter(self._views.values())

    def __len__(self) -> int:
        return len(self._views)


BUILT_IN: tuple[View, ...] = (
    revenue_by_category.VIEW,
    events_by_type.VIEW,
    user_sessions.VIEW,
    conversions.VIEW,
    cart_state.VIEW,
)


def default_registry() -> ViewRegistry:
    """A fresh registry holding the five built-in views."""
    return ViewRegistry(BUILT_IN)
