"""`docshelf backup` / `docshelf restore`: a snapshot taken while writes go on restores to a
database whose every row and blob is one the source holds, with every write acknowledged
before the backup began; a quiet backup restores to an identical copy."""

from __future__ import annotations

import asyncio
import base64
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from docshelf.blobs import open_blob_store
from docshelf.config import Settings
from docshelf.kit.db import metadata
from docshelf.models import space_blobs
from docshelf.ops import backup as ops_backup
from tests import factories
from tests.factories import Who

# Rows the load itself updates after creating them (heads, counters, sequence numbers): a
# snapshot may hold an older version of them, so only their presence is compared.
MUTABLE = {"spaces", "change_requests", "instance_settings", "jobs", "page_link_stats"}


@pytest.fixture
async def target(settings: Settings, tmp_path: Path) -> AsyncIterator[Settings]:
    """Empty settings to restore into: a new data directory, and on PostgreSQL a new database."""
    url = ""
    if not settings.is_sqlite:
        source = sa.make_url(settings.resolved_database_url)
        name = f"{source.database}_restore"
        admin = create_async_engine(source.set(database="postgres"), isolation_level="AUTOCOMMIT")
        async with admin.connect() as conn:
            await conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}"'))
            await conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
        url = source.set(database=name).render_as_string(hide_password=False)
        yield Settings(data_dir=tmp_path / "restored", database_url=url)
        async with admin.connect() as conn:
            await conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        await admin.dispose()
        return
    yield Settings(data_dir=tmp_path / "restored")


def _freeze(row: Any) -> tuple[Any, ...]:
    return tuple(
        orjson.dumps(v, option=orjson.OPT_SORT_KEYS) if isinstance(v, list | dict) else v
        for v in row
    )


async def _rows(url: str) -> dict[str, set[tuple[Any, ...]]]:
    engine = create_async_engine(url)
    out: dict[str, set[tuple[Any, ...]]] = {}
    try:
        async with engine.connect() as conn:
            for table in metadata.sorted_tables:
                out[table.name] = {_freeze(r) for r in await conn.execute(sa.select(table))}
            version = await conn.execute(sa.text("SELECT version_num FROM alembic_version"))
            out["alembic_version"] = {tuple(r) for r in version}
    finally:
        await engine.dispose()
    return out


def _keys(rows: set[tuple[Any, ...]], table: sa.Table) -> set[tuple[Any, ...]]:
    positions = [i for i, c in enumerate(table.columns) if c.primary_key]
    return {tuple(r[i] for i in positions) for r in rows}


async def _blobs(settings: Settings) -> dict[str, bytes]:
    store = open_blob_store(settings)
    out = {}
    for key in await asyncio.to_thread(lambda: list(store.keys())):
        data = await store.get(key)
        assert data is not None
        out[key] = data
    return out


async def _write(client: httpx.AsyncClient, org_id: str, who: Who, n: int) -> dict[str, Any]:
    """One acknowledged unit of load: a space, a change request, an edit with a file, a merge."""
    space = await factories.api_space(client, org_id, who, title=f"Load {n}")
    sid = space["id"]
    r = await client.post(
        f"/v1/spaces/{sid}/change-requests", json={"subject": f"CR {n}"}, headers=who.headers
    )
    assert r.status_code == 201, r.text
    cr = r.json()["id"]
    content = base64.b64encode(f"file {n} {os.urandom(8).hex()}".encode()).decode()
    changes = [
        {"operation": "insert_page", "title": f"Page {n}", "document": {"markdown": f"# {n}"}},
        {
            "operation": "insert_files",
            "files": [{"name": f"f{n}.txt", "base64": content, "contentType": "text/plain"}],
        },
    ]
    r = await client.post(
        f"/v1/spaces/{sid}/change-requests/{cr}/content?compat=false",
        json={"changes": changes},
        headers=who.headers,
    )
    assert r.status_code == 200, r.text
    r = await client.post(f"/v1/spaces/{sid}/change-requests/{cr}/merge", headers=who.headers)
    assert r.status_code == 200, r.text
    return {"space": sid, "change_request": cr}


def _check_restored_database(settings: Settings) -> None:
    if settings.is_sqlite:
        import sqlite3

        path = settings.data_dir / "docshelf.db"
        with sqlite3.connect(path) as conn:
            assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
            assert conn.execute("PRAGMA foreign_key_check").fetchall() == []


async def test_quiet_backup_restores_an_identical_copy(
    client: httpx.AsyncClient, db: AsyncEngine, settings: Settings, target: Settings, tmp_path: Path
) -> None:
    org_id, (admin,) = await factories.org_with_members(db)
    for n in range(3):
        await _write(client, org_id, admin, n)
    dest = tmp_path / "backup"
    done = await asyncio.to_thread(ops_backup.backup, settings, dest)
    assert done.engine == ("sqlite" if settings.is_sqlite else "postgresql")
    manifest = ops_backup.verify(dest)
    assert set(manifest["files"]) >= {"blobs/" + k for k in await _blobs(settings)}

    await asyncio.to_thread(ops_backup.restore, target, dest)
    _check_restored_database(target)
    assert await _rows(target.resolved_database_url) == await _rows(settings.resolved_database_url)
    assert await _blobs(target) == await _blobs(settings)

    # Restoring again into what is now full is refused, and changes nothing.
    with pytest.raises(ops_backup.BackupError, match="not empty"):
        await asyncio.to_thread(ops_backup.restore, target, dest)


async def test_backup_under_write_load(
    client: httpx.AsyncClient, db: AsyncEngine, settings: Settings, target: Settings, tmp_path: Path
) -> None:
    org_id, (admin,) = await factories.org_with_members(db)
    before = [await _write(client, org_id, admin, n) for n in range(3)]
    stop = asyncio.Event()
    during: list[dict[str, Any]] = []

    async def load() -> None:
        n = 100
        while not stop.is_set():
            during.append(await _write(client, org_id, admin, n))
            n += 1

    loader = asyncio.create_task(load())
    await asyncio.sleep(0.2)
    dest = tmp_path / "backup"
    await asyncio.to_thread(ops_backup.backup, settings, dest)
    stop.set()
    await loader
    assert during, "no write ran during the backup"

    await asyncio.to_thread(ops_backup.restore, target, dest)
    _check_restored_database(target)
    source = await _rows(settings.resolved_database_url)
    restored = await _rows(target.resolved_database_url)
    for table in metadata.sorted_tables:
        got, have = restored[table.name], source[table.name]
        if table.name in MUTABLE:
            assert _keys(got, table) <= _keys(have, table), table.name
        else:
            assert got <= have, (table.name, got - have)
    space_ids = {r[0] for r in restored["spaces"]}
    cr_ids = {r[0] for r in restored["change_requests"]}
    for write in before:
        assert write["space"] in space_ids and write["change_request"] in cr_ids
    # Every file the restored database names is there, with its bytes.
    blobs = await _blobs(target)
    source_blobs = await _blobs(settings)
    referenced = {r[space_blobs.columns.keys().index("blob_key")] for r in restored["space_blobs"]}
    assert referenced <= set(blobs)
    for key, data in blobs.items():
        assert source_blobs[key] == data


async def test_damaged_backup_is_refused(
    client: httpx.AsyncClient, db: AsyncEngine, settings: Settings, target: Settings, tmp_path: Path
) -> None:
    org_id, (admin,) = await factories.org_with_members(db)
    await _write(client, org_id, admin, 1)
    dest = tmp_path / "backup"
    await asyncio.to_thread(ops_backup.backup, settings, dest)
    name = next(n for n in ops_backup.verify(dest)["files"] if n.startswith("blobs/"))
    (dest / name).write_bytes(b"tampered")
    with pytest.raises(ops_backup.BackupError, match="does not match its checksum"):
        await asyncio.to_thread(ops_backup.restore, target, dest)
    assert await _blobs(target) == {}
    with pytest.raises(ops_backup.BackupError, match="not an empty directory"):
        await asyncio.to_thread(ops_backup.backup, settings, dest)


def _cli(settings: Settings, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "DOCSHELF_DATA_DIR": str(settings.data_dir),
        "DOCSHELF_DATABASE_URL": settings.database_url,
    }
    command = [sys.executable, "-c", "from docshelf.cli.main import main; main()", *args]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)


async def test_commands(
    client: httpx.AsyncClient, db: AsyncEngine, settings: Settings, target: Settings, tmp_path: Path
) -> None:
    org_id, (admin,) = await factories.org_with_members(db)
    await _write(client, org_id, admin, 1)
    dest = tmp_path / "nightly"
    done = await asyncio.to_thread(_cli, settings, "backup", str(dest))
    engine = "sqlite" if settings.is_sqlite else "postgresql"
    blobs = len(await _blobs(settings))
    assert (done.returncode, done.stdout) == (
        0,
        f"Backed up the {engine} database and {blobs} blobs to {dest}\n",
    ), done.stderr
    done = await asyncio.to_thread(_cli, target, "restore", str(dest))
    assert (done.returncode, done.stdout) == (
        0,
        f"Restored the {engine} database and {blobs} blobs from {dest}\n",
    ), done.stderr
    done = await asyncio.to_thread(_cli, target, "restore", str(dest))
    assert done.returncode == 1 and "not empty" in done.stderr
    done = await asyncio.to_thread(_cli, settings, "backup", str(dest))
    assert done.returncode == 1
    assert f"Error: {dest} exists and is not an empty directory" in done.stderr
