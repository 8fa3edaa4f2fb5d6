"""`docshelf backup` and `docshelf restore`: a consistent copy of the database and the file
bytes, taken while the server runs, with a manifest of SHA-256 checksums.

Order matters. File bytes are stored before the rows naming them commit, and only collected
after those rows are gone, so: (1) every blob present is copied, (2) the database is snapshot
(SQLite's online backup API, or `pg_dump`, both one transaction's view), (3) blobs that
appeared meanwhile are copied. Every blob the snapshot names existed at (1) or was stored
before its row committed, so it is in the copy; unreferenced extras are harmless."""

from __future__ import annotations

import asyncio
import hashlib
import os
import shutil
import sqlite3
import subprocess
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import sqlalchemy as sa
from sqlalchemy.engine import URL

from docshelf import __version__, datadir
from docshelf.blobs import BlobStore, open_blob_store
from docshelf.config import Settings

FORMAT = "docshelf-backup"
VERSION = 1
MANIFEST = "manifest.json"
SQLITE_FILE = "database.sqlite3"
PG_FILE = "database.pgdump"
BLOBS = "blobs"


class BackupError(Exception):
    """Refused or failed; the message says why and what to do."""


@dataclass(frozen=True)
class Summary:
    engine: str
    blobs: int
    bytes: int


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _pg_env(url: str) -> dict[str, str]:
    """libpq's variables for pg_dump/pg_restore: the password stays out of the process list."""
    parsed: URL = sa.make_url(url)
    env = dict(os.environ)
    for name, value in (
        ("PGHOST", parsed.host),
        ("PGPORT", parsed.port),
        ("PGUSER", parsed.username),
        ("PGPASSWORD", parsed.password),
        ("PGDATABASE", parsed.database),
    ):
        if value is not None:
            env[name] = str(value)
    return env


def _run(args: list[str], url: str) -> None:
    exe = shutil.which(args[0])
    if exe is None:
        raise BackupError(
            f"{args[0]} is not installed (Debian package postgresql-client); or back up the "
            "database with your own PostgreSQL tools and the blobs separately"
        )
    done = subprocess.run([exe, *args[1:]], env=_pg_env(url), capture_output=True, check=False)
    if done.returncode != 0:
        raise BackupError(f"{args[0]} failed: {done.stderr.decode(errors='replace').strip()}")


async def _copy_blobs(store: BlobStore, into: Path, skip: set[str]) -> set[str]:
    keys = await asyncio.to_thread(lambda: list(store.keys()))
    copied: set[str] = set()
    for key in keys:
        if key in skip:
            continue
        data = await store.get(key)
        if data is None:  # collected since it was listed: unreferenced by then
            continue
        target = into / key
        await asyncio.to_thread(target.write_bytes, data)
        copied.add(key)
    return copied


def backup(settings: Settings, dest: Path) -> Summary:
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise BackupError(f"{dest} exists and is not an empty directory")
    blob_dir = dest / BLOBS
    blob_dir.mkdir(parents=True, mode=0o700)
    os.chmod(dest, 0o700)  # the copy is as private as the data directory
    store = open_blob_store(settings)
    copied = asyncio.run(_copy_blobs(store, blob_dir, set()))
    if settings.is_sqlite:
        engine = "sqlite"
        source = datadir.sqlite_file(settings)
        if source is None or not source.is_file():
            raise BackupError("no SQLite database file to back up")
        target = dest / SQLITE_FILE
        src = sqlite3.connect(source)
        out = sqlite3.connect(target)
        try:
            # One step (pages=-1): one read transaction, so one consistent snapshot; writers
            # go on meanwhile (WAL).
            src.backup(out, pages=-1)
        finally:
            out.close()
            src.close()
        os.chmod(target, 0o600)
    else:
        engine = "postgresql"
        url = settings.resolved_database_url
        _run(["pg_dump", "--format=custom", "--no-owner", f"--file={dest / PG_FILE}"], url)
        os.chmod(dest / PG_FILE, 0o600)
    copied |= asyncio.run(_copy_blobs(store, blob_dir, copied))
    files: dict[str, dict[str, Any]] = {}
    for path in sorted(p for p in dest.rglob("*") if p.is_file()):
        rel = path.relative_to(dest).as_posix()
        files[rel] = {"size": path.stat().st_size, "sha256": _sha256(path)}
    manifest = {
        "format": FORMAT,
        "version": VERSION,
        "docshelf": __version__,
        "created_at": datetime.now(UTC).isoformat(),
        "engine": engine,
        "files": files,
    }
    (dest / MANIFEST).write_bytes(orjson.dumps(manifest, option=orjson.OPT_INDENT_2))
    size = sum(f["size"] for name, f in files.items() if name.startswith(BLOBS + "/"))
    return Summary(engine, len(copied), size)


def verify(source: Path) -> dict[str, Any]:
    """The manifest, once every file it lists matches its size and checksum."""
    try:
        manifest: dict[str, Any] = orjson.loads((source / MANIFEST).read_bytes())
    except (OSError, orjson.JSONDecodeError) as exc:
        raise BackupError(f"{source / MANIFEST} is missing or unreadable: {exc}") from exc
    if manifest.get("format") != FORMAT or manifest.get("version") != VERSION:
        raise BackupError(f"{source} is not a Docshelf backup of format version {VERSION}")
    for name, expected in manifest["files"].items():
        path = source / name
        if ".." in Path(name).parts or not path.is_file():
            raise BackupError(f"{name} listed in the manifest is missing")
        if path.stat().st_size != expected["size"] or _sha256(path) != expected["sha256"]:
            raise BackupError(f"{name} does not match its checksum: the backup is damaged")
    return manifest


async def _empty_postgres(url: str) -> bool:
    from sqlalchemy.ext.asyncio import create_async_engine

    engine = create_async_engine(url)
    try:
        async with engine.connect() as conn:
            count = await conn.scalar(
                sa.text(
                    "SELECT count(*) FROM information_schema.tables WHERE table_schema = "
                    "current_schema()"
                )
            )
    finally:
        await engine.dispose()
    return bool(count == 0)


async def _restore_blobs(store: BlobStore, source: Path, names: list[str]) -> int:
    if await asyncio.to_thread(lambda: next(iter(store.keys()), None)) is not None:
        raise BackupError("the blob store is not empty; restore into an empty one")
    for name in names:
        data = await asyncio.to_thread((source / name).read_bytes)
        await store.put(data)
    return len(names)


def restore(settings: Settings, source: Path) -> Summary:
    manifest = verify(source)
    engine = "sqlite" if settings.is_sqlite else "postgresql"
    if manifest["engine"] != engine:
        raise BackupError(
            f"the backup holds a {manifest['engine']} database; the settings name {engine}"
        )
    store = open_blob_store(settings)
    blob_names = [n for n in manifest["files"] if n.startswith(BLOBS + "/")]
    if engine == "sqlite":
        target = datadir.sqlite_file(settings)
        if target is None:
            raise BackupError("restore needs a SQLite database file in the settings")
        wal = target.with_name(target.name + "-wal")
        if (target.exists() and target.stat().st_size > 0) or wal.exists():
            raise BackupError(f"{target} is not empty; restore into an empty data directory")
        datadir.prepare(settings)
        # Blobs are checked empty before the database is written, so a refusal changes nothing.
        count = asyncio.run(_restore_blobs(store, source, blob_names))
        staged = target.with_name(target.name + ".restoring")
        shutil.copyfile(source / SQLITE_FILE, staged)
        os.chmod(staged, 0o600)
        os.replace(staged, target)
    else:
        url = settings.resolved_database_url
        if not asyncio.run(_empty_postgres(url)):
            raise BackupError("the PostgreSQL database is not empty; restore into an empty one")
        datadir.prepare(settings)
        count = asyncio.run(_restore_blobs(store, source, blob_names))
        _run(
            ["pg_restore", "--no-owner", "--no-privileges", "--exit-on-error",
             "--dbname", sa.make_url(url).database or "", str(source / PG_FILE)],
            url,
        )  # fmt: skip
    size = sum(manifest["files"][n]["size"] for n in blob_names)
    return Summary(engine, count, size)
