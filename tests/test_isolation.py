"""No request can hurt another: slow fetches hold no lock, lock contention answers 503, heavy
work runs in killable worker processes, and jobs run in a process of their own."""

from __future__ import annotations

import asyncio
import base64
import sqlite3
import threading
import time
from collections.abc import AsyncIterator, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
from fastapi import FastAPI
from sqlalchemy.ext.asyncio import AsyncEngine

from docshelf.auth.service import revoke_token
from docshelf.blobs import blob_key
from docshelf.cli.worker import start_worker_process, stop_worker_process
from docshelf.config import Settings
from docshelf.content import repository as content_repository
from docshelf.kit import offload
from docshelf.kit.db import unit_of_work
from docshelf.models import jobs
from docshelf.worker.queue import enqueue
from docshelf.worker.registry import JobEnv
from docshelf.worker.runner import JobRunner
from tests import factories
from tests.helpers import error, second_app, snapshot
from tests.offload_work import allocate, fail, sleep_then

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16


class SlowSite:
    """A loopback server whose answers wait until the test releases them."""

    def __init__(self) -> None:
        self.requested = threading.Event()
        self.release = threading.Event()
        site = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                site.requested.set()
                site.release.wait(60)
                self.send_response(200)
                self.send_header("Content-Type", "image/png")
                self.send_header("Content-Length", str(len(PNG)))
                self.end_headers()
                self.wfile.write(PNG)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/slow.png"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def slow_site(app: FastAPI, settings: Settings) -> Iterator[SlowSite]:
    site = SlowSite()
    app.state.fetcher = app.state.fetcher.__class__.from_settings(
        settings.model_copy(update={"fetch_allowed_hosts": "127.0.0.1"})
    )
    yield site
    site.close()


async def test_a_batch_waiting_on_slow_url_files_holds_no_lock(
    client: httpx.AsyncClient, db: AsyncEngine, slow_site: SlowSite
) -> None:
    org_id, (admin,) = await factories.org_with_members(db)
    space = await factories.api_space(client, org_id, admin, editMode="live")
    other_org, (other_admin,) = await factories.org_with_members(db)
    body = {
        "changes": [
            {"operation": "insert_files", "files": [{"name": "a.png", "url": slow_site.url}]}
        ]
    }
    batch = asyncio.create_task(
        client.post(f"/v1/spaces/{space['id']}/content", json=body, headers=admin.headers)
    )
    await asyncio.to_thread(slow_site.requested.wait, 30)
    assert slow_site.requested.is_set()
    # The batch is waiting on the network: another organization writes, and so does the same
    # space's admin, without waiting for it.
    created = await factories.api_space(client, other_org, other_admin, title="Elsewhere")
    assert created["title"] == "Elsewhere"
    renamed = await client.patch(
        f"/v1/spaces/{space['id']}", json={"title": "Renamed"}, headers=admin.headers
    )
    assert renamed.status_code == 200
    assert not batch.done()
    slow_site.release.set()
    r = await asyncio.wait_for(batch, 30)
    assert r.status_code == 200, r.text
    assert [f["name"] for f in r.json()["insertedFiles"]] == ["a.png"]


async def test_a_refused_caller_makes_us_fetch_nothing(
    client: httpx.AsyncClient, db: AsyncEngine, slow_site: SlowSite
) -> None:
    org_id, (admin,) = await factories.org_with_members(db)
    space = await factories.api_space(client, org_id, admin, editMode="live")
    outsider = await factories.user(db)
    body = {
        "changes": [
            {"operation": "insert_files", "files": [{"name": "a.png", "url": slow_site.url}]}
        ]
    }
    before = await snapshot(db)
    r = await client.post(f"/v1/spaces/{space['id']}/content", json=body, headers=outsider.headers)
    assert (r.status_code, r.json()) == (404, error(404, "Space not found"))
    assert not slow_site.requested.is_set()
    assert await snapshot(db) == before


@pytest.fixture
async def impatient(settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    """A second app on the same database that waits 0.3 s for a lock."""
    async with second_app(settings, lock_timeout=0.3) as c:
        yield c


async def test_lock_contention_answers_503_and_changes_nothing(
    client: httpx.AsyncClient, db: AsyncEngine, settings: Settings, impatient: httpx.AsyncClient
) -> None:
    org_id, (admin,) = await factories.org_with_members(db)
    space = await factories.api_space(client, org_id, admin, editMode="live")
    body = {
        "changes": [{"operation": "insert_page", "title": "Late", "document": {"markdown": "x"}}]
    }
    before = await snapshot(db)
    if db.dialect.name == "sqlite":
        # Another process holds SQLite's write lock.
        holder = sqlite3.connect(str(settings.data_dir / "test.db"), isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        try:
            r = await impatient.post(
                f"/v1/spaces/{space['id']}/content", json=body, headers=admin.headers
            )
        finally:
            holder.execute("ROLLBACK")
            holder.close()
    else:
        # Another transaction holds the space's row lock.
        async with db.connect() as conn, conn.begin():
            await conn.execute(
                sa.text("SELECT id FROM spaces WHERE id = :id FOR UPDATE"), {"id": space["id"]}
            )
            r = await impatient.post(
                f"/v1/spaces/{space['id']}/content", json=body, headers=admin.headers
            )
    assert r.status_code == 503
    assert r.json() == error(503, "The server is busy with other writes; retry shortly")
    assert r.headers["retry-after"] == "1"
    assert await snapshot(db) == before
    # Once the lock is free the same write goes through.
    r = await impatient.post(f"/v1/spaces/{space['id']}/content", json=body, headers=admin.headers)
    assert r.status_code == 200, r.text


async def test_offloaded_work_is_bounded_and_the_pool_recovers() -> None:
    assert await offload.run(sleep_then, 0.0, "done", seconds=30, lane="parse") == "done"
    started = time.monotonic()
    with pytest.raises(offload.OffloadTimeout):
        await offload.run(sleep_then, 60.0, "never", seconds=0.5, lane="parse")
    assert time.monotonic() - started < 30  # killed, not waited for
    with pytest.raises(ValueError, match="refused in the worker"):
        await offload.run(fail, "refused in the worker", seconds=30, lane="parse")
    offload.configure(workers=1, memory_bytes=512 * 1024 * 1024)
    offload.shutdown()
    with pytest.raises(MemoryError):
        await offload.run(allocate, 2 * 1024 * 1024 * 1024, seconds=30, lane="parse")
    assert (
        await offload.run(sleep_then, 0.0, "still serving", seconds=30, lane="parse")
        == "still serving"
    )
    offload.shutdown()


async def test_serve_runs_jobs_in_a_process_of_its_own(db: AsyncEngine, settings: Settings) -> None:
    async with unit_of_work(db) as conn:
        # A purge of a space that no longer exists: the handler has nothing to do but succeed.
        await enqueue(conn, "space.purge", {"space": "gone"})
    process = start_worker_process(settings)
    try:
        assert process.pid is not None and process.is_alive()
        status = None
        for _ in range(600):
            async with db.connect() as conn:
                status = (
                    await conn.execute(sa.select(jobs.c.status).where(jobs.c.kind == "space.purge"))
                ).scalar_one()
            if status == "done":
                break
            await asyncio.sleep(0.05)
        assert status == "done"
    finally:
        stop_worker_process(process)
    assert not process.is_alive()


async def test_bytes_of_a_refused_batch_are_collected(
    client: httpx.AsyncClient, db: AsyncEngine, app: FastAPI, job_env: JobEnv
) -> None:
    org_id, (admin,) = await factories.org_with_members(db)
    space = await factories.api_space(client, org_id, admin, editMode="live")
    data = b"\x89PNG\r\n\x1a\n" + b"refused" * 10
    body = {
        "changes": [
            {
                "operation": "insert_files",
                "files": [
                    {
                        "name": "a.png",
                        "contentType": "image/png",
                        "base64": base64.b64encode(data).decode(),
                    }
                ],
            },
            {"operation": "delete_page", "page": "missing"},
        ]
    }
    r = await client.post(f"/v1/spaces/{space['id']}/content", json=body, headers=admin.headers)
    assert r.status_code == 400, r.text
    # The bytes were stored before the transaction; the refusal handed them to the collector.
    key = blob_key(data)
    assert await app.state.blobs.exists(key)
    await JobRunner(db, job_env).drain()
    assert not await app.state.blobs.exists(key)


async def test_a_token_revoked_while_a_batch_waits_writes_nothing(
    client: httpx.AsyncClient, db: AsyncEngine, slow_site: SlowSite
) -> None:
    org_id, (admin,) = await factories.org_with_members(db)
    space = await factories.api_space(client, org_id, admin, editMode="live")
    body = {
        "changes": [
            {"operation": "insert_files", "files": [{"name": "a.png", "url": slow_site.url}]}
        ]
    }
    batch = asyncio.create_task(
        client.post(f"/v1/spaces/{space['id']}/content", json=body, headers=admin.headers)
    )
    await asyncio.to_thread(slow_site.requested.wait, 30)
    before = await snapshot(db)
    async with unit_of_work(db) as conn:
        await revoke_token(conn, admin.token)
    revoked = await snapshot(db)
    assert revoked != before
    slow_site.release.set()
    r = await asyncio.wait_for(batch, 30)
    assert (r.status_code, r.json()) == (401, error(401, "Invalid or revoked API token"))
    after = await snapshot(db)
    # Nothing written but the collection of the bytes fetched for it (beside the jobs queued
    # before: the space's creation queued its events' dispatch).
    queued = [job for job in after.pop("jobs") if job not in revoked["jobs"]]
    assert [job[1] for job in queued] == ["content.collect_blobs"]
    assert after == {k: v for k, v in revoked.items() if k != "jobs"}


async def test_bytes_collected_between_put_and_write_are_put_back(
    client: httpx.AsyncClient, db: AsyncEngine, app: FastAPI
) -> None:
    org_id, (admin,) = await factories.org_with_members(db)
    space = await factories.api_space(client, org_id, admin)
    data = b"bytes that a collector deleted meanwhile"
    store = app.state.blobs
    put = await content_repository.put_blobs(store, [data])
    key = blob_key(data)
    await store.delete(key)  # what a collection job between the put and the write does
    async with unit_of_work(db) as conn:
        await content_repository.store_blobs(conn, store, space["id"], {key: data}, put=put)
    assert await store.get(key) == data
