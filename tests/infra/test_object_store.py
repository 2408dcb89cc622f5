"""The local object store: bound to loopback, keys kept secret, a real S3 round trip."""

from __future__ import annotations

import pytest

from config.settings import load_settings
from infra import object_store
from infra.object_store import Credentials


@pytest.mark.unit
def test_every_listener_is_bound_to_loopback_on_the_configured_ports(tmp_path):
    settings = load_settings(storage={"server_home": str(tmp_path), "server_port": 20100})
    cmd = object_store.command(settings)
    assert "-ip=127.0.0.1" in cmd and "-ip.bind=127.0.0.1" in cmd
    assert "-s3.port=20100" in cmd and "-master.port=20101" in cmd
    assert "-s3.port.iceberg=0" in cmd and "-s3.port.lance=0" in cmd  # their fixed defaults off
    assert object_store.endpoint(settings) == "http://127.0.0.1:20100"


@pytest.mark.unit
def test_keys_come_from_settings_and_are_never_shown(tmp_path):
    settings = load_settings(
        storage={"access_key": "lk-id", "secret_key": "s3cr3t-value", "server_home": str(tmp_path)}
    )
    keys = object_store.credentials(settings)
    assert keys == Credentials("lk-id", "s3cr3t-value")
    assert "s3cr3t-value" not in repr(keys)
    assert "s3cr3t-value" not in repr(settings) and "s3cr3t-value" not in str(settings.storage)


@pytest.mark.unit
def test_the_bucket_is_the_first_segment_of_an_s3a_root():
    assert load_settings(storage={"root": "s3a://lake/data/x"}).storage.bucket() == "lake"
    assert load_settings(storage={"root": ".lk/data"}).storage.bucket() is None


@pytest.mark.integration
def test_up_generates_private_keys_creates_the_bucket_and_stores_objects(base_settings, tmp_path):
    from tests.support.cluster import BUCKET, local_object_store

    with local_object_store(base_settings, tmp_path / "s3") as settings:
        stored = tmp_path / "s3" / "credentials.json"
        assert stored.stat().st_mode & 0o077 == 0
        s3 = object_store.client(settings)
        assert BUCKET in object_store.status(settings).buckets
        s3.put_object(Bucket=BUCKET, Key="probe/a.txt", Body=b"hello")
        assert s3.get_object(Bucket=BUCKET, Key="probe/a.txt")["Body"].read() == b"hello"
        stranger = object_store.client(
            load_settings(
                storage={
                    "endpoint": settings.storage.endpoint,
                    "access_key": "nobody",
                    "secret_key": "wrong",
                }
            )
        )
        with pytest.raises(Exception, match="InvalidAccessKeyId"):
            stranger.list_buckets()
    assert not object_store.status(settings).running


@pytest.mark.unit
def test_down_with_no_server_started_stops_nothing(tmp_path):
    settings = load_settings(storage={"server_home": str(tmp_path / "none")})
    assert object_store.down(settings) is False
    assert object_store.credentials(settings) is None
