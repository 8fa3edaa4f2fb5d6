"""One contract for every blob store, run against a local directory and against S3 (moto's server
on loopback, so the real boto3 code path runs without any network beyond this machine)."""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto.server import ThreadedMotoServer

from docshelf.blobs import CHUNK, BlobStore, LocalBlobStore, S3BlobStore, open_blob_store
from docshelf.config import Settings

ACCESS_KEY = "testing-access-key"
SECRET_KEY = "testing-secret-key"
REGION = "us-east-1"
_buckets = itertools.count()

MALFORMED_KEYS = [
    "",
    "abc",
    "0" * 63,
    "0" * 65,
    "A" * 64,
    "g" * 64,
    "0" * 64 + "\n",
    "\n" + "0" * 63,
    " " + "0" * 63,
    "../" + "0" * 61,
    "/" + "0" * 63,
    "00/00/" + "0" * 58,
    "..",
    "0" * 63 + "\x00",
]


@pytest.fixture(scope="module", autouse=True)
def isolated_environment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    # Nothing from the developer's AWS or blob setup may leak in, and botocore must never fall
    # back to probing instance metadata (a link-local address) for anything.
    empty = tmp_path_factory.mktemp("aws")
    with pytest.MonkeyPatch.context() as mp:
        for name in list(os.environ):
            if name.startswith(("AWS_", "DOCSHELF_BLOB_", "DOCSHELF_S3_")):
                mp.delenv(name)
        mp.setenv("AWS_EC2_METADATA_DISABLED", "true")
        mp.setenv("AWS_CONFIG_FILE", str(empty / "config"))
        mp.setenv("AWS_SHARED_CREDENTIALS_FILE", str(empty / "credentials"))
        yield


@pytest.fixture(scope="module")
def moto_endpoint(isolated_environment: None) -> Iterator[str]:
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()


@pytest.fixture(scope="module")
def s3_admin(moto_endpoint: str) -> Any:
    """A plain boto3 client, to arrange and inspect buckets behind the store's back."""
    return boto3.client(
        "s3",
        endpoint_url=moto_endpoint,
        region_name=REGION,
        aws_access_key_id=ACCESS_KEY,
        aws_secret_access_key=SECRET_KEY,
    )


def _s3_settings(endpoint: str, bucket: str, prefix: str = "") -> Settings:
    return Settings(
        blob_storage="s3",
        s3_bucket=bucket,
        s3_prefix=prefix,
        s3_endpoint_url=endpoint,
        s3_region=REGION,
        s3_access_key_id=ACCESS_KEY,
        s3_secret_access_key=SECRET_KEY,
    )


@pytest.fixture(params=["local", "s3"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> BlobStore:
    if request.param == "local":
        return open_blob_store(Settings(data_dir=tmp_path))
    endpoint: str = request.getfixturevalue("moto_endpoint")
    # A fresh bucket per test keeps the tests independent of each other's objects.
    bucket = f"docshelf-test-{next(_buckets)}"
    request.getfixturevalue("s3_admin").create_bucket(Bucket=bucket)
    return open_blob_store(_s3_settings(endpoint, bucket, prefix="install-1"))


async def test_put_get_round_trip(store: BlobStore) -> None:
    for data in [b"hello, blobs", b"", bytes(range(256)) * 4096]:
        key = await store.put(data)
        assert key == hashlib.sha256(data).hexdigest()
        assert await store.get(key) == data


async def test_put_is_idempotent(store: BlobStore) -> None:
    first = await store.put(b"same bytes")
    second = await store.put(b"same bytes")
    assert first == second
    assert await store.get(first) == b"same bytes"
    assert _stored_keys(store) == [first]


async def test_different_bytes_get_different_keys(store: BlobStore) -> None:
    a = await store.put(b"a")
    b = await store.put(b"b")
    assert a != b
    assert (await store.get(a), await store.get(b)) == (b"a", b"b")
    assert _stored_keys(store) == sorted([a, b])


async def test_missing_blob(store: BlobStore) -> None:
    key = hashlib.sha256(b"never stored").hexdigest()
    assert await store.get(key) is None
    assert await store.exists(key) is False


async def test_open_streams_in_chunks(store: BlobStore) -> None:
    data = os.urandom(2 * CHUNK + 5)
    key = await store.put(data)
    opened = await store.open(key)
    assert opened is not None and opened.size == len(data)
    chunks = [chunk async for chunk in opened.chunks]
    assert b"".join(chunks) == data
    assert max(len(c) for c in chunks) <= CHUNK  # never the whole blob at once
    empty = await store.open(await store.put(b""))
    assert empty is not None and empty.size == 0
    assert [chunk async for chunk in empty.chunks] == []
    assert await store.open(hashlib.sha256(b"never stored").hexdigest()) is None
    with pytest.raises(ValueError, match="malformed blob key"):
        await store.open("../" + "0" * 61)


async def test_exists(store: BlobStore) -> None:
    key = await store.put(b"present")
    assert await store.exists(key) is True


async def test_delete(store: BlobStore) -> None:
    keep = await store.put(b"keep")
    gone = await store.put(b"gone")
    await store.delete(gone)
    assert await store.get(gone) is None
    assert await store.exists(gone) is False
    assert await store.get(keep) == b"keep"
    # Deleting what is absent is not an error, and a deleted blob can come back.
    await store.delete(gone)
    assert await store.put(b"gone") == gone
    assert await store.get(gone) == b"gone"


async def test_malformed_keys_are_refused(store: BlobStore) -> None:
    await store.put(b"something to find")
    for key in MALFORMED_KEYS:
        with pytest.raises(ValueError, match="malformed blob key"):
            await store.get(key)
        with pytest.raises(ValueError, match="malformed blob key"):
            await store.exists(key)
        with pytest.raises(ValueError, match="malformed blob key"):
            await store.delete(key)
    assert len(_stored_keys(store)) == 1


async def test_concurrent_puts_of_the_same_bytes(store: BlobStore) -> None:
    data = os.urandom(256 * 1024)
    keys = await asyncio.gather(*(store.put(data) for _ in range(16)))
    assert set(keys) == {hashlib.sha256(data).hexdigest()}
    assert await store.get(keys[0]) == data
    assert _stored_keys(store) == [keys[0]]


def _stored_keys(store: BlobStore) -> list[str]:
    """What the backend really holds, read past the store's own interface: proves "stored once"
    and, locally, that no temporary file was left behind."""
    if isinstance(store, LocalBlobStore):
        files = _files(store.root)
        for path in files:
            assert path == store.path_for(path.name)
        return sorted(p.name for p in files)
    assert isinstance(store, S3BlobStore)
    listing = store._client.list_objects_v2(Bucket=store.bucket)
    names = [obj["Key"] for obj in listing.get("Contents", [])]
    for name in names:
        assert name.startswith("install-1/")
    return sorted(name.removeprefix("install-1/") for name in names)


def _files(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file()]


# Local store specifics.


async def test_local_layout_fans_out_under_data_dir(tmp_path: Path) -> None:
    store = open_blob_store(Settings(data_dir=tmp_path))
    key = await store.put(b"layout")
    assert (tmp_path / "blobs" / key[:2] / key[2:4] / key).read_bytes() == b"layout"
    # Nobody else's to read, whatever the umask.
    for path in (
        tmp_path / "blobs",
        tmp_path / "blobs" / key[:2],
        tmp_path / "blobs" / key[:2] / key[2:4],
    ):
        assert stat.S_IMODE(path.stat().st_mode) == 0o700
    assert stat.S_IMODE((tmp_path / "blobs" / key[:2] / key[2:4] / key).stat().st_mode) == 0o600


async def test_local_blob_dir_setting(tmp_path: Path) -> None:
    store = open_blob_store(Settings(data_dir=tmp_path / "data", blob_dir=tmp_path / "elsewhere"))
    key = await store.put(b"elsewhere")
    assert (tmp_path / "elsewhere" / key[:2] / key[2:4] / key).is_file()
    assert not (tmp_path / "data").exists()


async def test_local_failed_write_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = LocalBlobStore(tmp_path)

    def failing_fsync(fd: int) -> None:
        raise OSError("disk gone")

    monkeypatch.setattr(os, "fsync", failing_fsync)
    with pytest.raises(OSError, match="disk gone"):
        await store.put(b"doomed")
    monkeypatch.undo()
    assert _files(tmp_path) == []
    assert await store.exists(hashlib.sha256(b"doomed").hexdigest()) is False


async def test_local_malformed_key_never_touches_the_filesystem(tmp_path: Path) -> None:
    root = tmp_path / "root"
    outside = tmp_path / "outside"
    outside.write_bytes(b"secret")
    store = LocalBlobStore(root)
    with pytest.raises(ValueError):
        await store.get("../outside")
    with pytest.raises(ValueError):
        await store.delete("../outside")
    assert outside.read_bytes() == b"secret"
    assert not root.exists()


# S3 store specifics.


async def test_s3_without_prefix(moto_endpoint: str, s3_admin: Any) -> None:
    s3_admin.create_bucket(Bucket="docshelf-no-prefix")
    store = open_blob_store(_s3_settings(moto_endpoint, "docshelf-no-prefix"))
    key = await store.put(b"top level")
    listing = s3_admin.list_objects_v2(Bucket="docshelf-no-prefix")
    assert [obj["Key"] for obj in listing["Contents"]] == [key]


async def test_s3_prefix_is_normalized(moto_endpoint: str) -> None:
    store = open_blob_store(_s3_settings(moto_endpoint, "any", prefix="/a/b"))
    assert isinstance(store, S3BlobStore)
    assert store.object_name("0" * 64) == "a/b/" + "0" * 64


async def test_s3_missing_bucket_is_an_error_not_a_missing_blob(moto_endpoint: str) -> None:
    store = open_blob_store(_s3_settings(moto_endpoint, "docshelf-no-such-bucket"))
    with pytest.raises(ClientError, match="NoSuchBucket"):
        await store.put(b"nowhere to go")
    with pytest.raises(ClientError, match="NoSuchBucket"):
        await store.get(hashlib.sha256(b"nowhere to go").hexdigest())


# Choosing a store.


def test_open_blob_store_refuses_bad_settings(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown DOCSHELF_BLOB_STORAGE 'ftp'"):
        open_blob_store(Settings(data_dir=tmp_path, blob_storage="ftp"))
    with pytest.raises(ValueError, match="DOCSHELF_S3_BUCKET"):
        open_blob_store(Settings(data_dir=tmp_path, blob_storage="s3"))
    with pytest.raises(ValueError, match="both"):
        open_blob_store(Settings(blob_storage="s3", s3_bucket="b", s3_access_key_id="only-the-id"))


def test_settings_from_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("DOCSHELF_BLOB_STORAGE", "s3")
    monkeypatch.setenv("DOCSHELF_S3_BUCKET", "docs")
    monkeypatch.setenv("DOCSHELF_S3_PREFIX", "prod")
    monkeypatch.setenv("DOCSHELF_S3_ENDPOINT_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("DOCSHELF_S3_ACCESS_KEY_ID", ACCESS_KEY)
    monkeypatch.setenv("DOCSHELF_S3_SECRET_ACCESS_KEY", SECRET_KEY)
    store = open_blob_store(Settings())
    assert isinstance(store, S3BlobStore)
    assert (store.bucket, store.prefix) == ("docs", "prod/")
    monkeypatch.setenv("DOCSHELF_BLOB_STORAGE", "local")
    monkeypatch.setenv("DOCSHELF_BLOB_DIR", str(tmp_path))
    local = open_blob_store(Settings())
    assert isinstance(local, LocalBlobStore)
    assert local.root == tmp_path
