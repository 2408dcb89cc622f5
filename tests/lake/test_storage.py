"""Small status files are replaced whole: the new text, and no staging file left behind."""

from __future__ import annotations

import pytest

from lake import storage

pytestmark = pytest.mark.integration


def test_write_text_replaces_the_file_and_leaves_no_staging_file(spark, tmp_path):
    uri = f"{tmp_path.as_uri()}/status/_metrics.json"
    storage.write_text(spark, uri, '{"batch_id": 1}')
    storage.write_text(spark, uri, '{"batch_id": 2}')

    assert storage.read_text(spark, uri) == '{"batch_id": 2}'
    assert [
        n
        for n in storage.list_files(spark, f"{tmp_path.as_uri()}/status")
        if not n.endswith(".crc")
    ] == ["_metrics.json"]
