from datetime import timedelta
from pathlib import Path

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from config.settings import (
    ConfigError,
    Settings,
    format_duration,
    load_settings,
    parse_duration,
    with_sections,
)
from lk.cli.app import app

pytestmark = pytest.mark.unit


def test_yaml_then_environment_overrides(tmp_path: Path, monkeypatch):
    config = tmp_path / "lk.yaml"
    config.write_text("mode: kappa\nkafka:\n  bootstrap_servers: a:1\nviews:\n  session_gap: 5m\n")
    monkeypatch.setenv("LK_KAFKA__BOOTSTRAP_SERVERS", "b:2")
    settings = load_settings(config)
    assert settings.mode == "kappa"
    assert settings.kafka.bootstrap_servers == "b:2"
    assert settings.views.session_gap == timedelta(minutes=5)


def test_storage_root_accepts_any_uri():
    settings = load_settings(storage={"root": "s3a://bucket/lk/"})
    assert settings.storage.uri() == "s3a://bucket/lk"


def test_invalid_values_name_the_field(tmp_path: Path):
    config = tmp_path / "lk.yaml"
    config.write_text("mode: sigma\nviews:\n  hop_slide: 3 minutes\n")
    with pytest.raises(ConfigError) as error:
        load_settings(config)
    assert "mode:" in str(error.value) and "views.hop_slide" in str(error.value)


def test_unknown_fields_are_rejected():
    with pytest.raises(ConfigError, match=r"kafka\.bootstrap"):
        load_settings(kafka={"bootstrap": "x"})


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("500ms", 0.5), ("90s", 90), ("10 minutes", 600), ("1h", 3600), ("2 days", 172800)],
)
def test_durations_read_like_people_write_them(text, seconds):
    assert parse_duration(text) == timedelta(seconds=seconds)


@pytest.mark.parametrize("seconds", [0.25, 1.5, 90, 600])
def test_a_written_duration_reads_back_the_same(seconds):
    """Settings saved as JSON (a comparison's own, read by the dashboard) load again."""
    written = format_duration(timedelta(seconds=seconds))
    assert parse_duration(written) == timedelta(seconds=seconds)
    settings = load_settings(serving={"refresh_interval": timedelta(seconds=seconds)})
    assert Settings.model_validate(settings.model_dump(mode="json")).serving == settings.serving


def test_the_cli_exits_with_the_field_named(monkeypatch):
    monkeypatch.setenv("LK_MODE", "sigma")
    result = CliRunner().invoke(app, ["status"])
    assert result.exit_code == 2
    assert "mode" in result.output


def test_the_example_config_is_valid_and_documents_every_stream_knob():
    example = Path(__file__).resolve().parents[2] / "lk.example.yaml"
    settings = load_settings(str(example))
    assert settings.mode == "lambda"
    assert settings.stream == load_settings(None).stream


def test_the_cluster_config_is_valid_and_looks_for_commits_less_often_on_the_object_store():
    """Each look is a LIST request per table there (``serving.refresh_interval``)."""
    cluster = load_settings(str(Path(__file__).resolve().parents[2] / "lk.cluster.yaml"))
    assert cluster.storage.on_object_store()
    assert cluster.serving.refresh_interval > load_settings(None).serving.refresh_interval


def test_with_sections_validates_what_it_changes() -> None:
    changed = with_sections(load_settings(), spark={"class_archive_dir": "/tmp/cds"})
    assert changed.spark.class_archive_dir == Path("/tmp/cds")
    with pytest.raises(ValidationError):
        with_sections(load_settings(), kafka={"events_partitions": "many"})
