"""Views: each a pure ``DataFrame -> DataFrame`` function plus its merge rule."""

from views.base import View, ViewContext
from views.registry import ViewRegistry, default_registry

__all__ = ["View", "ViewContext", "ViewRegistry", "default_registry"]
