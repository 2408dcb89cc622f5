"""The SparkSession factory: cached jars, Delta and the Kafka source really work."""

from __future__ import annotations

import pytest
from pyspark.sql import Row
from pyspark.testing import assertDataFrameEqual

from event_log.kafka_source import read_range
from event_log.topics import end_offsets
from tests.support.env import run_lk
from tests.support.kafka import produce_spec
from workload.generator import WorkloadSpec

pytestmark = pytest.mark.integration


def test_delta_table_written_altered_and_read_back(spark, tmp_path):
    path = str(tmp_path / "smoke")
    spark.createDataFrame([Row(id=1, name="a"), Row(id=2, name="b")]).write.format("delta").save(
        path
    )
    spark.sql(f"ALTER TABLE delta.`{path}` ADD COLUMNS (note STRING)")
    spark.createDataFrame([Row(id=3, name="c", note="new")]).write.format("delta").mode(
        "append"
    ).save(path)
    assertDataFrameEqual(
        spark.read.format("delta").load(path),
        [
            Row(id=1, name="a", note=None),
            Row(id=2, name="b", note=None),
            Row(id=3, name="c", note="new"),
        ],
    )
    assert spark.conf.get("spark.sql.session.timeZone") == "UTC"


def test_a_spark_batch_read_of_the_events_topic_sees_every_offset(spark, topic_settings):
    settings = topic_settings
    produce_spec(settings, WorkloadSpec(events=500, users=20, products=10, seed=9))
    ends = end_offsets(settings, settings.kafka.events_topic)
    rows = read_range(spark, settings, settings.kafka.events_topic, {}, ends)
    seen = {(r.partition, r.offset) for r in rows.select("partition", "offset").collect()}
    assert seen == {(p, o) for p, end in ends.items() for o in range(end)}
    assert len(ends) == settings.kafka.events_partitions


def test_a_cli_command_that_starts_spark_prints_no_jvm_chatter(base_settings, tmp_path):
    env = {
        "LK_STORAGE__ROOT": str(tmp_path / "data"),
        "LK_SPARK__JARS_DIR": str(base_settings.spark.jars_dir),
        "LK_SPARK__LOG_DIR": str(tmp_path / "logs"),
    }
    done = run_lk("status", env=env, cwd=tmp_path, timeout=180)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert "not started" in done.stdout and "log4j" not in done.stdout
    assert "Setting default log level" in (tmp_path / "logs" / "lk-status.log").read_text()
