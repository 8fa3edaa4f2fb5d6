"""Content-addressed blob storage: the key of a blob is the SHA-256 of its bytes, so a put is
idempotent and identical files are stored once, whichever backend holds them."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import os
import re
import tempfile
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from docshelf.kit.metrics import BLOB_BYTES

if TYPE_CHECKING:
    from docshelf.config import Settings

# Readiness probes write this name, which can never be a blob key.
PROBE_NAME = ".docshelf-probe"

_KEY = re.compile(r"[0-9a-f]{64}")
# Large enough that a thread hop per chunk costs little, small enough that a download of any
# size holds only this much in memory.
CHUNK = 256 * 1024


def blob_key(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def check_key(key: object) -> str:
    """Refuse anything but 64 lowercase hex digits, before a key reaches a path or an object
    name: that alone keeps "../", separators, NULs and the like out of the filesystem."""
    if not isinstance(key, str) or _KEY.fullmatch(key) is None:
        raise ValueError(f"malformed blob key: {key!r}")
    return key


@dataclass(frozen=True)
class OpenBlob:
    """A blob being read: its size (for Content-Length) and its bytes in chunks. Iterating the
    chunks to the end, or closing them early, releases the file or the connection; `discard`
    releases them unread (a HEAD request)."""

    size: int
    chunks: AsyncIterator[bytes]
    release: Callable[[], None]

    async def discard(self) -> None:
        await asyncio.to_thread(self.release)


async def _chunks(read: Callable[[int], bytes], close: Callable[[], None]) -> AsyncIterator[bytes]:
    try:
        while chunk := await asyncio.to_thread(read, CHUNK):
            yield chunk
    finally:
        await asyncio.to_thread(close)


class BlobStore(Protocol):
    async def put(self, data: bytes) -> str: ...

    async def get(self, key: str) -> bytes | None: ...

    async def open(self, key: str) -> OpenBlob | None: ...

    async def delete(self, key: str) -> None: ...

    async def exists(self, key: str) -> bool: ...

    async def probe_write(self) -> None:
        """Raise unless the store takes writes now (readiness)."""

    def keys(self) -> Iterator[str]:
        """Every stored key (blocking: for backups, run it in a thread)."""
        ...


def _fsync_dir(path: Path) -> None:
    # A rename or a new entry is durable only once the directory holding it is synced.
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _make_dirs(root: Path, path: Path) -> None:
    """Create the fan-out directories below root, syncing each parent whose entries changed, so a
    blob that survives a crash is also reachable after it. Directories are 0700 and files 0600
    (mkstemp's mode, kept by the rename): file bytes are nobody else's to read."""
    root.mkdir(parents=True, exist_ok=True, mode=0o700)
    current = root
    for part in path.relative_to(root).parts:
        child = current / part
        try:
            child.mkdir(mode=0o700)
        except FileExistsError:
            pass
        else:
            _fsync_dir(current)
        current = child


class LocalBlobStore:
    """Blobs as files under root, at root/ab/cd/<hash>: two levels of fan-out keep directories
    small (65,536 leaves) without one directory per blob."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def path_for(self, key: str) -> Path:
        check_key(key)
        return self.root / key[0:2] / key[2:4] / key

    async def put(self, data: bytes) -> str:
        key = blob_key(data)
        await asyncio.to_thread(self._write, self.path_for(key), data)
        BLOB_BYTES.labels("put").inc(len(data))
        return key

    async def get(self, key: str) -> bytes | None:
        return await asyncio.to_thread(self._read, self.path_for(key))

    async def open(self, key: str) -> OpenBlob | None:
        path = self.path_for(key)
        try:
            f = await asyncio.to_thread(path.open, "rb")
        except FileNotFoundError:
            return None
        size = os.fstat(f.fileno()).st_size
        BLOB_BYTES.labels("read").inc(size)
        return OpenBlob(size, _chunks(f.read, f.close), f.close)

    async def delete(self, key: str) -> None:
        await asyncio.to_thread(self._unlink, self.path_for(key))

    async def exists(self, key: str) -> bool:
        return await asyncio.to_thread(self.path_for(key).is_file)

    async def probe_write(self) -> None:
        await asyncio.to_thread(self._probe)

    def _probe(self) -> None:
        fd, tmp = tempfile.mkstemp(dir=self.root, prefix=PROBE_NAME)
        os.close(fd)
        os.unlink(tmp)

    def keys(self) -> Iterator[str]:
        if not self.root.is_dir():
            return
        for first in sorted(self.root.iterdir()):
            if not first.is_dir():
                continue
            for second in sorted(first.iterdir()):
                if not second.is_dir():
                    continue
                for entry in sorted(second.iterdir()):
                    if _KEY.fullmatch(entry.name) and entry.is_file():
                        yield entry.name

    def _write(self, path: Path, data: bytes) -> None:
        # Files only ever appear whole (see below), so one already there holds these bytes. Its
        # writer may not have synced the directory yet, and our caller is about to rely on it.
        if path.is_file():
            _fsync_dir(path.parent)
            return
        directory = path.parent
        _make_dirs(self.root, directory)
        # The temporary file lives in the target directory so os.replace is a same-filesystem
        # rename, atomic: a reader sees no file or the whole file, never a prefix. Its name can
        # never be a valid key, so a leftover from a crash is never served.
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            # Concurrent writers of the same bytes each replace with identical content.
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise
        _fsync_dir(directory)

    @staticmethod
    def _read(path: Path) -> bytes | None:
        try:
            return path.read_bytes()
        except FileNotFoundError:
            return None

    @staticmethod
    def _unlink(path: Path) -> None:
        try:
            path.unlink()
        except FileNotFoundError:
            return
        _fsync_dir(path.parent)


class S3BlobStore:
    """Blobs as objects <prefix><hash> in an S3 bucket (AWS, MinIO or another S3-compatible
    service at endpoint_url). boto3 is blocking, so every call runs in a worker thread; its
    clients are thread-safe, so one client serves them all."""

    def __init__(
        self,
        bucket: str,
        *,
        prefix: str = "",
        endpoint_url: str | None = None,
        region: str = "us-east-1",
        access_key_id: str | None = None,
        secret_access_key: str | None = None,
    ) -> None:
        if not bucket:
            raise ValueError("S3 blob storage needs a bucket")
        if bool(access_key_id) != bool(secret_access_key):
            raise ValueError("set both the S3 access key id and the secret access key, or neither")
        # Imported here so that only deployments using S3 pay for loading boto3.
        import boto3
        from botocore.config import Config

        self.bucket = bucket
        prefix = prefix.lstrip("/")
        self.prefix = prefix if not prefix or prefix.endswith("/") else prefix + "/"
        # Explicit keys mean no credential chain is consulted, so nothing but the endpoint is
        # ever contacted (no instance-metadata probe); without them the standard AWS chain
        # applies (environment, shared files, container or instance role).
        session = boto3.session.Session(
            aws_access_key_id=access_key_id or None,
            aws_secret_access_key=secret_access_key or None,
            region_name=region or None,
        )
        config = Config(
            # Other S3-compatible services are rarely reachable as <bucket>.<host>.
            s3={"addressing_style": "path" if endpoint_url else "auto"},
            # Newer botocore adds CRC checksums by default, which several S3-compatible services
            # reject; the Content-MD5 sent with every put covers integrity instead.
            request_checksum_calculation="when_required",
            response_checksum_validation="when_required",
            retries={"mode": "standard", "max_attempts": 3},
            connect_timeout=10,
            read_timeout=60,
        )
        self._client: Any = session.client("s3", endpoint_url=endpoint_url or None, config=config)

    def object_name(self, key: str) -> str:
        return self.prefix + check_key(key)

    async def put(self, data: bytes) -> str:
        key = blob_key(data)
        name = self.object_name(key)
        await asyncio.to_thread(self._put, name, data)
        BLOB_BYTES.labels("put").inc(len(data))
        return key

    async def get(self, key: str) -> bytes | None:
        return await asyncio.to_thread(self._get, self.object_name(key))

    async def open(self, key: str) -> OpenBlob | None:
        response = await asyncio.to_thread(self._get_object, self.object_name(key))
        if response is None:
            return None
        body = response["Body"]
        size = int(response["ContentLength"])
        BLOB_BYTES.labels("read").inc(size)
        return OpenBlob(size, _chunks(body.read, body.close), body.close)

    async def delete(self, key: str) -> None:
        name = self.object_name(key)
        # S3 answers 204 for an absent key too.
        await asyncio.to_thread(self._client.delete_object, Bucket=self.bucket, Key=name)

    async def exists(self, key: str) -> bool:
        return await asyncio.to_thread(self._exists, self.object_name(key))

    async def probe_write(self) -> None:
        await asyncio.to_thread(
            self._client.put_object, Bucket=self.bucket, Key=self.prefix + PROBE_NAME, Body=b""
        )

    def keys(self) -> Iterator[str]:
        pages = self._client.get_paginator("list_objects_v2").paginate(
            Bucket=self.bucket, Prefix=self.prefix
        )
        for page in pages:
            for item in page.get("Contents", ()):
                key = item["Key"][len(self.prefix) :]
                if _KEY.fullmatch(key):
                    yield key

    def _put(self, name: str, data: bytes) -> None:
        # A HEAD is cheaper than sending bytes the bucket already holds.
        if self._exists(name):
            return
        md5 = base64.b64encode(hashlib.md5(data, usedforsecurity=False).digest()).decode()
        self._client.put_object(Bucket=self.bucket, Key=name, Body=data, ContentMD5=md5)

    def _get_object(self, name: str) -> dict[str, Any] | None:
        from botocore.exceptions import ClientError

        try:
            response: dict[str, Any] = self._client.get_object(Bucket=self.bucket, Key=name)
        except ClientError as exc:
            # Only NoSuchKey: a missing bucket is also a 404, and must not pass for a missing blob.
            if exc.response.get("Error", {}).get("Code") == "NoSuchKey":
                return None
            raise
        return response

    def _get(self, name: str) -> bytes | None:
        response = self._get_object(name)
        if response is None:
            return None
        body = response["Body"]
        try:
            data: bytes = body.read()
        finally:
            body.close()
        return data

    def _exists(self, name: str) -> bool:
        from botocore.exceptions import ClientError

        try:
            self._client.head_object(Bucket=self.bucket, Key=name)
        except ClientError as exc:
            # A HEAD answer has no body to tell a missing key from a missing bucket; a missing
            # bucket still surfaces on the first put or get.
            if exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") == 404:
                return False
            raise
        return True


def open_blob_store(settings: Settings) -> BlobStore:
    kind = settings.blob_storage.strip().lower()
    if kind == "local":
        return LocalBlobStore(settings.blob_dir or settings.data_dir / "blobs")
    if kind == "s3":
        if not settings.s3_bucket:
            raise ValueError("DOCSHELF_BLOB_STORAGE=s3 needs DOCSHELF_S3_BUCKET")
        return S3BlobStore(
            settings.s3_bucket,
            prefix=settings.s3_prefix,
            endpoint_url=settings.s3_endpoint_url or None,
            region=settings.s3_region,
            access_key_id=settings.s3_access_key_id or None,
            secret_access_key=settings.s3_secret_access_key or None,
        )
    raise ValueError(
        f"unknown DOCSHELF_BLOB_STORAGE {settings.blob_storage!r}: expected 'local' or 's3'"
    )
