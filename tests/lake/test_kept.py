"""Rows kept in the session: held until released."""

from __future__ import annotations

import pytest

from lake.kept import kept, released
from tests.support.cache import holds

pytestmark = pytest.mark.integration


def test_released_rows_leave_the_session(spark):
    frame = kept(spark.createDataFrame([("a", 1)], "key string, n long"))
    assert holds(spark, frame)
    released(frame)
    assert not holds(spark, frame)
