"""The logic change: a built-in view setting, or a setting of your own view (``views.options``)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from compare.design import changed
from config.settings import load_settings

pytestmark = pytest.mark.unit


def test_a_dotted_change_sets_your_views_option_and_keeps_the_others() -> None:
    base = load_settings(views={"options": {"site": {"window": "5 minutes", "count_column": "n"}}})
    new = changed(base, {"site.window": "10 minutes", "other.slide": "1 minute"})
    assert new.views.options == {
        "site": {"window": "10 minutes", "count_column": "n"},
        "other": {"slide": "1 minute"},
    }
    assert new.views.option("site", "window", None) == "10 minutes"
    assert new.views.option("nobody", "window", "15 minutes") == "15 minutes"
    assert base.views.option("site", "window", None) == "5 minutes"


def test_a_plain_change_sets_a_field_of_the_view_settings() -> None:
    new = changed(load_settings(), {"tumbling_window": "5 minutes"})
    assert new.views.tumbling_window == timedelta(minutes=5)
    assert new.views.options == {}
