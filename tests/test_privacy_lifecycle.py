"""What stops when it should: download links of deleted spaces, share keys of spaces no longer
shared, staged import archives; blobs kept or collected under concurrent uploads; streamed
downloads."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import io
import os
import threading
import zipfile
from collections.abc import Iterator
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import jwt
import pytest
import sqlalchemy as sa
from fastapi import FastAPI
from sqlalchemy.ext.asyncio import AsyncEngine

from docshelf.blobs import CHUNK, LocalBlobStore
from docshelf.content import lifecycle, repository
from docshelf.kit.clock import clock
from docshelf.models import import_stages, instance_settings, jobs, space_blobs
from docshelf.worker.registry import JobEnv
from docshelf.worker.runner import JobRunner
from tests import factories
from tests.conftest import BASE
from tests.factories import Who
from tests.helpers import error, snapshot


async def live_space(client: httpx.AsyncClient, db: AsyncEngine) -> tuple[str, Who, str]:
    admin = await factories.user(db)
    org_id = await factories.organization(db, owner=admin)
    space = await factories.api_space(client, org_id, admin, editMode="live")
    return space["id"], admin, org_id


async def upload(
    client: httpx.AsyncClient, sid: str, who: Who, name: str, data: bytes, ctype: str
) -> dict[str, Any]:
    file = {"name": name, "base64": base64.b64encode(data).decode(), "contentType": ctype}
    r = await client.post(
        f"/v1/spaces/{sid}/content",
        json={"changes": [{"operation": "insert_files", "files": [file]}]},
        headers=who.headers,
    )
    assert r.status_code == 200, r.text
    files = (await client.get(f"/v1/spaces/{sid}/content/files", headers=who.headers)).json()
    found: dict[str, Any] = next(f for f in files["items"] if f["name"] == name)
    return found


async def drain(db: AsyncEngine, job_env: JobEnv) -> None:
    runner = JobRunner(db, job_env)
    while await runner.run_once():
        pass


def local_store(app: FastAPI) -> LocalBlobStore:
    store = app.state.blobs
    assert isinstance(store, LocalBlobStore)
    return store


# -- downloads ---------------------------------------------------------------------------------


async def test_downloads_stop_when_the_space_is_deleted(
    client: httpx.AsyncClient, db: AsyncEngine, job_env: JobEnv
) -> None:
    sid, admin, _org = await live_space(client, db)
    file = await upload(client, sid, admin, "notes.txt", b"private notes", "text/plain")
    link = file["downloadURL"].removeprefix(BASE)
    assert (await client.get(link)).content == b"private notes"

    assert (await client.delete(f"/v1/spaces/{sid}", headers=admin.headers)).status_code == 205
    r = await client.get(link)
    assert r.json() == error(404, "Download link not found")

    # Restored, the same link serves again.
    r = await client.post(f"/v1/spaces/{sid}/restore", headers=admin.headers)
    assert r.status_code == 200, r.text
    assert (await client.get(link)).content == b"private notes"

    assert (await client.delete(f"/v1/spaces/{sid}", headers=admin.headers)).status_code == 205
    clock.advance(timedelta(days=8))
    await drain(db, job_env=job_env)
    r = await client.get(link)
    assert r.json() == error(404, "Download link not found")


async def test_a_link_serves_only_blobs_its_space_references(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    mine, admin, org_id = await live_space(client, db)
    theirs = (await factories.api_space(client, org_id, admin, editMode="live"))["id"]
    secret = await upload(client, theirs, admin, "secret.txt", b"their bytes", "text/plain")
    link = secret["downloadURL"].removeprefix(BASE)
    # A validly signed link naming this space and the other space's blob.
    claims = jwt.decode(link.rsplit("/", 1)[1], options={"verify_signature": False})
    async with db.connect() as conn:
        key = (
            await conn.execute(
                sa.select(instance_settings.c.value).where(
                    instance_settings.c.key == "file_download_secret"
                )
            )
        ).scalar_one()
    forged = jwt.encode({**claims, "s": mine}, key, algorithm="HS256")
    assert (await client.get(f"/v1/downloads/{forged}")).json() == error(
        404, "Download link not found"
    )
    assert (await client.get(link)).content == b"their bytes"


async def test_downloads_are_streamed_with_their_length_and_headers(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    sid, admin, _org = await live_space(client, db)
    big = os.urandom(2 * CHUNK + 17)  # three chunks
    file = await upload(client, sid, admin, "big.bin", big, "application/octet-stream")
    async with client.stream("GET", file["downloadURL"].removeprefix(BASE)) as r:
        assert r.status_code == 200
        assert r.headers["content-length"] == str(len(big))
        chunks = [chunk async for chunk in r.aiter_raw()]
    assert b"".join(chunks) == big
    # Every answer carries its request id (kit/observe.py); its value is tested there.
    assert dict(r.headers) | {"content-length": "-", "x-request-id": "-"} == {
        "x-request-id": "-",
        "content-type": "application/octet-stream",
        "content-length": "-",
        "content-disposition": "attachment; filename*=UTF-8''big.bin",
        "x-content-type-options": "nosniff",
        "content-security-policy": "sandbox; default-src 'none'",
        "cache-control": "private, max-age=300",
    }
    svg = b'<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>'
    file = await upload(client, sid, admin, "x.svg", svg, "image/svg+xml")
    r = await client.get(file["downloadURL"].removeprefix(BASE))
    assert r.content == svg
    assert r.headers["content-disposition"] == "attachment; filename*=UTF-8''x.svg"
    gif = b"GIF89a\x01\x00\x01\x00\x00\x00\x00;"
    file = await upload(client, sid, admin, "dot.gif", gif, "image/gif")
    r = await client.get(file["downloadURL"].removeprefix(BASE))
    assert (r.content, r.headers["content-length"]) == (gif, str(len(gif)))
    assert r.headers["content-disposition"] == "inline; filename*=UTF-8''dot.gif"


async def test_a_download_whose_bytes_are_gone_is_404(
    app: FastAPI, client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    sid, admin, _org = await live_space(client, db)
    data = b"soon gone"
    file = await upload(client, sid, admin, "gone.txt", data, "text/plain")
    await local_store(app).delete(hashlib.sha256(data).hexdigest())
    r = await client.get(file["downloadURL"].removeprefix(BASE))
    assert r.json() == error(404, "File not found")


# -- share keys --------------------------------------------------------------------------------


async def test_share_keys_rotate_when_sharing_ends(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    admin = await factories.user(db)
    outsider = await factories.user(db)
    org_id = await factories.organization(db, owner=admin)
    space = await factories.api_space(client, org_id, admin, visibility="share-link")
    sid = space["id"]
    url = f"/v1/spaces/{sid}"

    async def share_key() -> str:
        published = (await client.get(url, headers=admin.headers)).json()["urls"]["published"]
        return str(published.rsplit("shareKey=", 1)[1])

    async def opens(key: str) -> bool:
        r = await client.get(url, params={"shareKey": key}, headers=outsider.headers)
        assert r.status_code in (200, 404), r.text
        return r.status_code == 200

    first = await share_key()
    assert await opens(first)
    # Saying share-link again keeps the link people already have.
    await client.patch(url, json={"visibility": "share-link"}, headers=admin.headers)
    assert await share_key() == first

    r = await client.patch(url, json={"visibility": "private"}, headers=admin.headers)
    assert r.status_code == 200 and "published" not in r.json()["urls"]
    assert not await opens(first)
    r = await client.patch(url, json={"visibility": "share-link"}, headers=admin.headers)
    assert r.status_code == 200
    second = await share_key()
    assert second != first
    assert not await opens(first)
    assert await opens(second)
    assert (await client.get(url, params={"shareKey": first}, headers=outsider.headers)).json() == (
        error(404, "Space not found")
    )


# -- blobs: collection and concurrent uploads ---------------------------------------------------


async def test_collection_keeps_referenced_blobs_and_deletes_the_rest(
    app: FastAPI, client: httpx.AsyncClient, db: AsyncEngine, job_env: JobEnv
) -> None:
    sid, admin, _org = await live_space(client, db)
    await upload(client, sid, admin, "kept.txt", b"kept", "text/plain")
    store = local_store(app)
    orphan = await store.put(b"orphan")
    kept = hashlib.sha256(b"kept").hexdigest()
    async with db.begin() as conn:
        await lifecycle.collect_blobs(conn, {"keys": [kept, orphan]}, env=job_env)
    assert await store.exists(kept)
    assert not await store.exists(orphan)


def postgres_only(db: AsyncEngine) -> None:
    if db.dialect.name != "postgresql":
        pytest.skip("SQLite writers are serial: no upload runs beside a collection")


async def waiting_for_a_blob_lock(db: AsyncEngine) -> None:
    """Returns once some session waits for an advisory lock (no sleeps: the state is polled)."""
    query = sa.text("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted")
    async with db.connect() as conn:
        for _ in range(10_000):
            if (await conn.execute(query)).scalar_one():
                return
            await asyncio.sleep(0)
            await conn.commit()
    raise AssertionError("nobody waited for the lock")


async def referenced(db: AsyncEngine, key: str) -> bool:
    async with db.connect() as conn:
        return key in await repository.held_blobs(conn, [key])


async def test_an_upload_waiting_on_a_collection_puts_the_bytes_back(
    app: FastAPI, client: httpx.AsyncClient, db: AsyncEngine, job_env: JobEnv
) -> None:
    postgres_only(db)
    sid, _admin, _org = await live_space(client, db)
    store = local_store(app)
    data = b"collected while being uploaded"
    key = await store.put(data)  # bytes a purged space left behind

    async with db.connect() as collector:
        await collector.begin()
        await repository.lock_blob_keys(collector, [key])

        async def upload_in_own_transaction() -> None:
            async with db.begin() as conn:
                await repository.store_blobs(conn, store, sid, {key: data})

        uploading = asyncio.create_task(upload_in_own_transaction())
        await waiting_for_a_blob_lock(db)  # it put the bytes and now waits to reference them
        await lifecycle.collect_blobs(collector, {"keys": [key]}, env=job_env)
        assert not await store.exists(key)
        await collector.commit()
    await uploading
    assert await referenced(db, key)
    assert await store.get(key) == data


async def test_a_collection_waiting_on_an_upload_keeps_the_bytes(
    app: FastAPI, client: httpx.AsyncClient, db: AsyncEngine, job_env: JobEnv
) -> None:
    postgres_only(db)
    sid, _admin, _org = await live_space(client, db)
    store = local_store(app)
    data = b"referenced just in time"

    async with db.connect() as uploader:
        await uploader.begin()
        await repository.store_blobs(uploader, store, sid, {blob_key(data): data})

        async def collect() -> None:
            async with db.begin() as conn:
                await lifecycle.collect_blobs(conn, {"keys": [blob_key(data)]}, env=job_env)

        collecting = asyncio.create_task(collect())
        await waiting_for_a_blob_lock(db)
        await uploader.commit()
    await collecting
    assert await store.get(blob_key(data)) == data


async def test_no_install_wide_lock_across_blob_writes(
    app: FastAPI, client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    postgres_only(db)
    sid, _admin, _org = await live_space(client, db)
    store = local_store(app)
    busy = await store.put(b"being collected")
    other = b"another blob"
    async with db.connect() as collector:
        await collector.begin()
        await repository.lock_blob_keys(collector, [busy])
        # Another blob's upload commits while the collection holds its lock.
        async with db.begin() as conn:
            await asyncio.wait_for(
                repository.store_blobs(conn, store, sid, {blob_key(other): other}), 60
            )
        await collector.rollback()
    assert await referenced(db, blob_key(other))


def blob_key(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# -- staged imports ----------------------------------------------------------------------------


def zip_of(entries: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for name, content in entries.items():
            archive.writestr(name, content)
    return out.getvalue()


async def stages(db: AsyncEngine) -> list[tuple[Any, ...]]:
    async with db.connect() as conn:
        return [tuple(r) for r in (await conn.execute(sa.select(import_stages))).all()]


@contextlib.contextmanager
def serving(path: str, body: bytes) -> Iterator[str]:
    """A loopback web server answering `path` with `body`; yields its base URL."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            found = self.path == path
            self.send_response(200 if found else 404)
            self.send_header("Content-Length", str(len(body) if found else 0))
            self.end_headers()
            if found:
                self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


async def large_import(client: httpx.AsyncClient, sid: str, who: Who, body: bytes) -> str:
    """Queues the import (a run, its answer 202); the revision it will create."""
    with serving("/many.zip", body) as base:
        r = await client.post(
            f"/v1/spaces/{sid}/content/import",
            json={"url": base + "/many.zip", "source": "zip"},
            headers=who.headers,
        )
    assert r.status_code == 202, r.text
    return str(r.json()["revision"])


@pytest.fixture
def loopback_fetch(app: FastAPI) -> None:
    app.state.settings = app.state.settings.model_copy(update={"fetch_allowed_hosts": "127.0.0.1"})


@pytest.fixture
def small_large_imports(monkeypatch: pytest.MonkeyPatch, loopback_fetch: None) -> None:
    from docshelf.imports import service

    monkeypatch.setattr(service, "LARGE_IMPORT", 2)


async def test_a_finished_import_drops_its_archive(
    app: FastAPI,
    client: httpx.AsyncClient,
    db: AsyncEngine,
    small_large_imports: None,
    job_env: JobEnv,
) -> None:
    sid, admin, _org = await live_space(client, db)
    archive = zip_of({f"p{i}.md": f"# Page {i}\n".encode() for i in range(3)})
    key = blob_key(archive)
    revision = await large_import(client, sid, admin, archive)
    assert await stages(db) == [(revision, sid, key)]
    assert await local_store(app).exists(key)
    await drain(db, job_env=job_env)
    head = (await client.get(f"/v1/spaces/{sid}", headers=admin.headers)).json()["revision"]
    assert head == revision
    assert await stages(db) == []
    assert not await local_store(app).exists(key)
    async with db.connect() as conn:
        assert (await conn.execute(sa.select(space_blobs))).all() == []


async def test_a_failed_import_drops_its_archive_when_it_gives_up(
    app: FastAPI,
    client: httpx.AsyncClient,
    db: AsyncEngine,
    small_large_imports: None,
    job_env: JobEnv,
) -> None:
    sid, admin, org = await live_space(client, db)
    archive = zip_of({f"p{i}.md": f"# Page {i}\n".encode() for i in range(3)})
    await large_import(client, sid, admin, archive)
    # Locked before the job runs: every attempt fails.
    r = await client.patch(f"/v1/spaces/{sid}", json={"editMode": "locked"}, headers=admin.headers)
    assert r.status_code == 200
    for _ in range(10):
        await drain(db, job_env=job_env)
        clock.advance(timedelta(hours=2))
    async with db.connect() as conn:
        statuses = (await conn.execute(sa.select(jobs.c.kind, jobs.c.status))).all()
    assert ("content.import", "failed") in statuses
    assert await stages(db) == []
    assert not await local_store(app).exists(blob_key(archive))
    # Its run says so.
    r = await client.get(f"/v1/org/{org}/imports", headers=admin.headers)
    ((status, reason),) = [(i["status"], i["reason"]) for i in r.json()["items"]]
    assert (status, reason) == (
        "failed",
        "The import could not be applied: it failed on every attempt",
    )


async def test_purging_a_space_drops_its_pending_import(
    app: FastAPI,
    client: httpx.AsyncClient,
    db: AsyncEngine,
    small_large_imports: None,
    job_env: JobEnv,
) -> None:
    sid, admin, _org = await live_space(client, db)
    archive = zip_of({f"p{i}.md": f"# Page {i}\n".encode() for i in range(3)})
    await large_import(client, sid, admin, archive)
    async with db.begin() as conn:
        # The import job is lost (say an operator deleted it); the purge still frees the bytes.
        await conn.execute(sa.delete(jobs))
    assert (await client.delete(f"/v1/spaces/{sid}", headers=admin.headers)).status_code == 205
    clock.advance(timedelta(days=8))
    await drain(db, job_env=job_env)
    assert await stages(db) == []
    assert not await local_store(app).exists(blob_key(archive))
    snap = await snapshot(db)
    assert snap["spaces"] == []


# -- imports report what they leave out --------------------------------------------------------


def nested_summary(depth: int) -> dict[str, bytes]:
    lines = [f"{'  ' * i}* [Level {i}](l{i}.md)" for i in range(depth)]
    pages = {f"l{i}.md": f"Level {i} text.\n".encode() for i in range(depth)}
    return {"SUMMARY.md": ("\n".join(lines) + "\n").encode(), **pages}


async def test_an_import_answers_what_it_skipped(
    client: httpx.AsyncClient, db: AsyncEngine, loopback_fetch: None
) -> None:
    sid, admin, _org = await live_space(client, db)
    # Twelve levels: markdown-it's default nesting limit used to keep nine and drop the rest.
    entries = nested_summary(12)
    entries["SUMMARY.md"] += b"* [Elsewhere](https://example.com/docs)\n* [Gone](gone.md)\n"
    entries |= {
        "unlisted.md": b"# Not in the table of contents\n",
        "manual.pdf": b"%PDF-1.7",
        ".git/HEAD": b"ref: refs/heads/main\n",
        ".git/config": b"[core]\n",
    }
    with serving("/book.zip", zip_of(entries)) as base:
        r = await client.post(
            f"/v1/spaces/{sid}/content/import",
            json={"url": base + "/book.zip", "source": "zip"},
            headers=admin.headers,
        )
    assert r.status_code == 201, r.text
    assert r.json() == {
        "revision": r.json()["revision"],
        "importedResources": 12,
        "totalResources": 16,
        "detected": "gitbook",
        "skipped": [
            {"path": ".git/", "reason": "hidden folder", "kind": "skipped"},
            {
                "path": "manual.pdf",
                "reason": "unsupported file type: .pdf files are not imported, only markdown "
                "and images",
                "kind": "skipped",
            },
            {
                "path": "gone.md",
                "reason": 'listed in SUMMARY.md as "Gone" but not in the archive: imported as '
                "an empty page",
                "kind": "unresolved",
            },
            {
                "path": "unlisted.md",
                "reason": "markdown not listed in SUMMARY.md",
                "kind": "skipped",
            },
        ],
        "skippedCounts": {"skipped": 3, "unresolved": 1, "approximated": 0},
    }
    pages = (await client.get(f"/v1/spaces/{sid}/content/pages", headers=admin.headers)).json()
    depth, level = 0, pages["pages"][0]
    while level.get("pages"):
        depth, level = depth + 1, level["pages"][0]
    assert (depth + 1, level["title"]) == (12, "Level 11")
    # The external entry is a link page, as GitBook keeps it.
    assert [p["title"] for p in pages["pages"]] == ["Level 0", "Elsewhere", "Gone"]
    assert pages["pages"][1]["type"] == "link"


async def test_a_summary_too_deep_to_read_is_cut_and_reported(
    client: httpx.AsyncClient, db: AsyncEngine, loopback_fetch: None
) -> None:
    """Nothing is dropped silently: what the page tree cannot hold is named, the rest lands."""
    sid, admin, _org = await live_space(client, db)
    with serving("/deep.zip", zip_of(nested_summary(300))) as base:
        r = await client.post(
            f"/v1/spaces/{sid}/content/import",
            json={"url": base + "/deep.zip", "source": "zip"},
            headers=admin.headers,
        )
    assert r.status_code == 201, r.text
    limit = "over the page depth limit"
    too_deep = f"{limit} (listed in SUMMARY.md too deep to import): left out"
    assert r.json() == {
        "revision": r.json()["revision"],
        "importedResources": 50,
        "totalResources": 300,
        "detected": "gitbook",
        "skipped": [
            {
                "path": "SUMMARY.md",
                "reason": f"{limit} (entries from line 52 to 300 nest deeper than 51 levels; "
                "an import holds at most 50): left out",
                "kind": "skipped",
            },
            *(
                {"path": f"l{i}.md", "reason": too_deep, "kind": "skipped"}
                for i in sorted(range(51, 300), key=lambda i: f"l{i}.md")
            ),
            {
                "path": "l50.md",
                "reason": f"{limit} (it would be 51 levels deep; an import holds at most 50): "
                "left out",
                "kind": "skipped",
            },
        ],
        "skippedCounts": {"skipped": 251, "unresolved": 0, "approximated": 0},
    }


async def test_the_import_command_prints_what_it_skipped(
    client: httpx.AsyncClient, db: AsyncEngine, settings: Any, tmp_path: Any
) -> None:
    from click.testing import CliRunner

    from docshelf.cli.main import main

    sid, _admin, _org = await live_space(client, db)
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "README.md").write_text("# Home\n")
    (folder / "slides.key").write_bytes(b"\0keynote")
    env = {"DOCSHELF_DATABASE_URL": settings.resolved_database_url}
    result = await asyncio.to_thread(
        CliRunner().invoke,
        main,
        ["--data-dir", str(settings.data_dir), "import", sid, str(folder)],
        env=env,
    )
    assert result.exit_code == 0, result.output
    assert (
        "Detected: folder\n"
        "1 pages and 0 files to import: 1 of 2 resources; 1 skipped, 0 unresolved, "
        "0 approximated\n"
        "skipped slides.key: unsupported file type: .key files are not imported, only markdown "
        "and images\n"
    ) in result.output
