"""SQLite writes run inline on the event loop (kit.db.InlineWrites): waiting for SQLite's write
lock, held by another process, never stops the loop, and the write is made once the lock is
free; concurrent writes of one process are each made. Nothing of this is SQLite-only in what
the API promises, so the second test runs on both engines."""

from __future__ import annotations

import asyncio
import sqlite3

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from docshelf.config import Settings
from tests import factories
from tests.helpers import second_app


async def test_a_write_waiting_for_another_process_s_lock_leaves_the_loop_free(
    client: httpx.AsyncClient, db: AsyncEngine, settings: Settings
) -> None:
    if db.dialect.name != "sqlite":
        pytest.skip("SQLite's lock: PostgreSQL's row locks are waited for by its server")
    org_id, (admin,) = await factories.org_with_members(db)
    space = await factories.api_space(client, org_id, admin)
    async with second_app(settings, lock_timeout=10) as patient:
        # Warm: the app's first write connects and compiles; what is measured is the wait.
        r = await patient.patch(
            f"/v1/spaces/{space['id']}", json={"title": "Sooner"}, headers=admin.headers
        )
        assert r.status_code == 200, r.text
        holder = sqlite3.connect(str(settings.data_dir / "test.db"), isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        try:
            write = asyncio.create_task(
                patient.patch(
                    f"/v1/spaces/{space['id']}", json={"title": "Later"}, headers=admin.headers
                )
            )
            loop = asyncio.get_running_loop()
            started = loop.time()
            for _ in range(30):
                await asyncio.sleep(0.01)
            # A read answers meanwhile (WAL readers never wait for the writer).
            r = await patient.get(f"/v1/spaces/{space['id']}", headers=admin.headers)
            assert (r.status_code, r.json()["title"]) == (200, "Sooner")
            # A wait for the lock that stopped the loop would have held it up to the 10 s lock
            # timeout, and the write would have given up (503) before the lock was freed.
            assert loop.time() - started < 3
            assert not write.done()
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        r = await write
        assert (r.status_code, r.json()["title"]) == (200, "Later")
        r = await client.get(f"/v1/spaces/{space['id']}", headers=admin.headers)
        assert r.json()["title"] == "Later"


async def test_concurrent_writes_of_one_process_are_each_made(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    org_id, (admin,) = await factories.org_with_members(db)
    space = await factories.api_space(client, org_id, admin)
    answers = await asyncio.gather(
        *(
            client.post(
                f"/v1/spaces/{space['id']}/comments",
                json={"body": {"markdown": f"Note {n}"}},
                headers=admin.headers,
            )
            for n in range(12)
        )
    )
    assert [r.status_code for r in answers] == [200] * 12
    r = await client.get(f"/v1/spaces/{space['id']}/comments", headers=admin.headers)
    assert r.status_code == 200
    made = sorted(a.json()["id"] for a in answers)
    assert sorted(c["id"] for c in r.json()["items"]) == made
    assert len(set(made)) == 12
