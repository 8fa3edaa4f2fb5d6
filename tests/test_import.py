"""Imports over HTTP from a loopback server (allowed by DOCSHELF_FETCH_ALLOWED_HOSTS), the SSRF
refusals, the durable job for large imports, and the CLI."""

from __future__ import annotations

import asyncio
import io
import threading
import zipfile
from collections.abc import Iterator
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
from click.testing import CliRunner
from fastapi import FastAPI
from sqlalchemy.ext.asyncio import AsyncEngine

from docshelf.cli.main import main
from docshelf.config import Settings
from docshelf.kit.clock import clock
from docshelf.worker.registry import JobEnv
from docshelf.worker.runner import JobRunner
from tests import factories
from tests.conftest import BASE
from tests.helpers import error, snapshot

Files = dict[str, tuple[str, bytes]]
TS = "2026-01-02T03:04:05.678Z"
LATER = "2026-01-02T03:04:10.678Z"


@pytest.fixture
def site() -> Iterator[tuple[str, Files]]:
    files: Files = {}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            found = files.get(self.path)
            if found is None:
                self.send_response(404)
                self.end_headers()
                return
            ctype, data = found
            self.send_response(200)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", files
    server.shutdown()
    server.server_close()


@pytest.fixture
def allow_loopback(app: FastAPI, settings: Settings) -> Iterator[None]:
    app.state.settings = settings.model_copy(update={"fetch_allowed_hosts": "127.0.0.1"})
    yield
    app.state.settings = settings


def zip_of(entries: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
    return out.getvalue()


def tree(pages: list[dict[str, Any]]) -> list[Any]:
    return [(p["title"], p["type"], tree(p.get("pages", []))) for p in pages]


async def setup(client: httpx.AsyncClient, db: AsyncEngine, **space: Any) -> tuple[Any, ...]:
    org_id, (admin, editor, reader) = await factories.org_with_members(db, "edit", "read")
    created = await factories.api_space(client, org_id, admin, visibility="unlisted", **space)
    return created["id"], admin, editor, reader


async def test_import_each_source(
    client: httpx.AsyncClient, db: AsyncEngine, site: tuple[str, Files], allow_loopback: None
) -> None:
    base, files = site
    sid, _admin, editor, reader = await setup(client, db)
    files["/guide.md"] = ("text/markdown", b"# Guide\n\nRead [the docs](https://example.com).\n")
    files["/page.html"] = (
        "text/html",
        b"<html><head><title>Web page</title><script>evil()</script></head>"
        b"<body><h1>Web page</h1><p>Some <b>bold</b> text, and <a href='more.html'>more</a>."
        b"</p></body></html>",
    )
    png = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16
    files["/book.zip"] = (
        "application/zip",
        zip_of(
            {
                "SUMMARY.md": b"# Summary\n\n* [Intro](README.md)\n* [Setup](setup.md)\n"
                b"  * [Linux](setup/linux.md)\n",
                "README.md": b"# Intro\n\nSee [setup](setup.md) and ![logo](logo.png).\n",
                "setup.md": b"# Setup\n\nSteps.\n",
                "setup/linux.md": b"# Linux\n\napt install.\n",
                "logo.png": png,
            }
        ),
    )
    url = f"/v1/spaces/{sid}/content/import"
    for path, source in (("/guide.md", "markdown"), ("/page.html", "html"), ("/book.zip", "zip")):
        r = await client.post(
            url, json={"url": base + path, "source": source}, headers=editor.headers
        )
        assert r.status_code == 201, r.text
        result = r.json()
        assert r.headers["location"].endswith(f"/revisions/{result['revision']}")
        head = (await client.get(f"/v1/spaces/{sid}", headers=reader.headers)).json()
        assert head["revision"] == result["revision"]
    assert result == {
        "revision": result["revision"],
        "importedResources": 4,
        "totalResources": 4,
        "detected": "gitbook",
        "skipped": [],
        "skippedCounts": {"skipped": 0, "unresolved": 0, "approximated": 0},
    }
    pages = (await client.get(f"/v1/spaces/{sid}/content/pages", headers=reader.headers)).json()
    assert tree(pages["pages"]) == [
        ("Guide", "document", []),
        ("Web page", "document", []),
        ("Intro", "document", []),
        ("Setup", "document", [("Linux", "document", [])]),
    ]
    intro = pages["pages"][2]
    page = (
        await client.get(
            f"/v1/spaces/{sid}/content/page/{intro['id']}?format=markdown", headers=reader.headers
        )
    ).json()
    logo = (await client.get(f"/v1/spaces/{sid}/content/files", headers=reader.headers)).json()[
        "items"
    ][0]
    assert page["markdown"] == f"See [setup](setup.md) and ![logo](/files/{logo['id']}).\n"
    # A web page's script is left out, and its relative links lead back to its site.
    web = pages["pages"][1]
    r = await client.get(
        f"/v1/spaces/{sid}/content/page/{web['id']}?format=markdown", headers=reader.headers
    )
    assert r.json()["markdown"] == f"Some **bold** text, and [more]({base}/more.html).\n"
    # Imported content is searchable at once.
    r = await client.get(
        f"/v1/spaces/{sid}/search", params={"query": "apt"}, headers=reader.headers
    )
    assert [i["title"] for i in r.json()["items"]] == ["Linux"]


async def test_refusals_change_nothing(
    client: httpx.AsyncClient, db: AsyncEngine, site: tuple[str, Files], allow_loopback: None
) -> None:
    base, files = site
    sid, admin, editor, reader = await setup(client, db)
    files["/bad.zip"] = ("application/zip", b"not a zip")
    url = f"/v1/spaces/{sid}/content/import"
    before = await snapshot(db)
    r = await client.post(
        url, json={"url": base + "/x.md", "source": "notion"}, headers=editor.headers
    )
    assert r.json() == error(
        400,
        "Invalid body field 'source': importing from 'notion' is not supported; "
        "use one of markdown, zip, html, docx",
    )
    r = await client.post(
        url, json={"url": base + "/x.md", "source": "markdown"}, headers=editor.headers
    )
    assert r.json() == error(400, "URL fetch failed: the server answered HTTP 404")
    r = await client.post(
        url, json={"url": base + "/bad.zip", "source": "zip"}, headers=editor.headers
    )
    assert r.status_code == 400 and "zip" in r.json()["error"]["message"]
    r = await client.post(
        url, json={"url": base + "/x.md", "source": "markdown"}, headers=reader.headers
    )
    assert r.json() == error(403, "You cannot edit this space")
    await client.patch(f"/v1/spaces/{sid}", json={"editMode": "locked"}, headers=admin.headers)
    before = await snapshot(db)
    r = await client.post(
        url, json={"url": base + "/x.md", "source": "markdown"}, headers=admin.headers
    )
    assert r.json() == error(403, "The space is locked: its content cannot be changed")
    assert await snapshot(db) == before


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://127.0.0.1/x.md", "loopback"),
        ("http://169.254.169.254/latest/meta-data", "link-local"),
        ("http://10.0.0.1/x.md", "private"),
        ("http://[::ffff:127.0.0.1]/x.md", "loopback"),
        ("http://2130706433/x.md", "canonical"),
        ("http://0x7f000001/x.md", "canonical"),
        ("file:///etc/passwd", "scheme"),
    ],
)
async def test_ssrf_refusals(
    client: httpx.AsyncClient, db: AsyncEngine, url: str, reason: str
) -> None:
    sid, admin, *_ = await setup(client, db)
    before = await snapshot(db)
    r = await client.post(
        f"/v1/spaces/{sid}/content/import",
        json={"url": url, "source": "markdown"},
        headers=admin.headers,
    )
    assert r.status_code == 400, r.text
    assert reason in r.json()["error"]["message"].lower(), r.json()
    assert await snapshot(db) == before


def run_body(
    org_id: str, sid: str, who: factories.Who, run_id: str, revision: str, url: str, **more: Any
) -> dict[str, Any]:
    """An import run as the API presents it; `more` adds or replaces fields."""
    return {
        "object": "import-run",
        "id": run_id,
        "status": "pending",
        "createdAt": TS,
        "updatedAt": TS,
        "source": {"type": "website", "url": url, "format": "zip"},
        "target": {"space": sid},
        "createdBy": who.id,
        "urls": {"location": f"{BASE}/v1/org/{org_id}/imports/{run_id}"},
        "revision": revision,
        "totalResources": 3,
        "detected": "folder",
        **more,
    }


async def queued_import(
    client: httpx.AsyncClient, sid: str, who: factories.Who, url: str
) -> dict[str, Any]:
    r = await client.post(
        f"/v1/spaces/{sid}/content/import", json={"url": url, "source": "zip"}, headers=who.headers
    )
    assert r.status_code == 202, r.text
    assert r.headers["location"] == r.json()["urls"]["location"]
    body: dict[str, Any] = r.json()
    return body


@pytest.fixture
def large(monkeypatch: pytest.MonkeyPatch, site: tuple[str, Files]) -> str:
    """Imports of more than two resources are queued; the URL of a three-page archive."""
    from docshelf.imports import service

    monkeypatch.setattr(service, "LARGE_IMPORT", 2)
    base, files = site
    files["/many.zip"] = (
        "application/zip",
        zip_of({f"p{i}.md": f"# Page {i}\n".encode() for i in range(3)}),
    )
    return base + "/many.zip"


async def test_large_imports_are_queued_as_an_observable_run(
    client: httpx.AsyncClient,
    db: AsyncEngine,
    allow_loopback: None,
    large: str,
    monkeypatch: pytest.MonkeyPatch,
    job_env: JobEnv,
) -> None:
    sid, admin, editor, reader = await setup(client, db)
    org_id = (await client.get(f"/v1/spaces/{sid}", headers=admin.headers)).json()["organization"]
    before = (await client.get(f"/v1/spaces/{sid}", headers=admin.headers)).json()["revision"]
    queued = await queued_import(client, sid, editor, large)
    run_id, revision = queued["id"], queued["revision"]
    pending = run_body(org_id, sid, editor, run_id, revision, large)
    # Nothing is claimed: no count of imported resources until the import has happened.
    assert queued == pending
    head = (await client.get(f"/v1/spaces/{sid}", headers=admin.headers)).json()["revision"]
    assert head == before != revision
    run_url = f"/v1/org/{org_id}/imports/{run_id}"
    r = await client.get(run_url, headers=reader.headers)
    assert (r.status_code, r.json()) == (200, pending)

    # While the job works on it (its archive read held back here), the run is in progress.

    store = job_env.blobs
    reading, release = asyncio.Event(), asyncio.Event()
    original = store.get

    async def held(key: str) -> bytes | None:
        reading.set()
        await release.wait()
        return await original(key)

    monkeypatch.setattr(store, "get", held)
    clock.advance(timedelta(seconds=5))
    running = asyncio.create_task(JobRunner(db, job_env).drain())
    try:
        await asyncio.wait_for(reading.wait(), 60)
        r = await client.get(run_url, headers=reader.headers)
        assert r.json() == {
            **pending,
            "status": "in-progress",
            "updatedAt": LATER,
            "startedAt": LATER,
        }
    finally:
        release.set()
        await running
    completed = {
        **pending,
        "status": "completed",
        "updatedAt": LATER,
        "startedAt": LATER,
        "completedAt": LATER,
        "importedResources": 3,
        "skipped": [],
        "skippedCounts": {"skipped": 0, "unresolved": 0, "approximated": 0},
    }
    r = await client.get(run_url, headers=reader.headers)
    assert r.json() == completed
    head = (await client.get(f"/v1/spaces/{sid}", headers=admin.headers)).json()["revision"]
    assert head == revision
    pages = (await client.get(f"/v1/spaces/{sid}/content/pages", headers=admin.headers)).json()
    assert [p["title"] for p in pages["pages"]] == ["Page 0", "Page 1", "Page 2"]

    listing = f"/v1/org/{org_id}/imports"
    r = await client.get(listing, headers=reader.headers)
    assert r.json() == {"items": [completed], "count": 1}
    for params, items in (
        ({"status": "completed"}, [completed]),
        ({"status": "active"}, []),
        ({"status": "failed"}, []),
        ({"space": sid}, [completed]),
        ({"space": "zzOtherSpace00000000"}, []),
    ):
        r = await client.get(listing, params=params, headers=reader.headers)
        assert r.json() == {"items": items, "count": len(items)}, params


async def test_a_run_that_cannot_be_applied_fails_with_its_reason(
    client: httpx.AsyncClient, db: AsyncEngine, allow_loopback: None, large: str, job_env: JobEnv
) -> None:
    sid, admin, editor, _reader = await setup(client, db)
    org_id = (await client.get(f"/v1/spaces/{sid}", headers=admin.headers)).json()["organization"]
    queued = await queued_import(client, sid, editor, large)
    # The staged archive is lost before the job runs (a blob store restored from an old copy).
    from docshelf.models import jobs

    async with db.connect() as conn:
        found = sa.select(jobs.c.payload).where(jobs.c.kind == "content.import")
        payload = (await conn.execute(found)).scalar_one()
    await job_env.blobs.delete(payload["blob"])
    before = {k: v for k, v in (await snapshot(db)).items() if k in ("spaces", "revisions")}
    await JobRunner(db, job_env).drain()
    r = await client.get(f"/v1/org/{org_id}/imports/{queued['id']}", headers=admin.headers)
    assert r.json() == {
        **queued,
        "status": "failed",
        "startedAt": TS,
        "reason": "The archive to import is no longer stored",
    }
    after = await snapshot(db)
    assert {"spaces": after["spaces"], "revisions": after["revisions"]} == before
    async with db.connect() as conn:
        found = sa.select(jobs.c.status).where(jobs.c.kind == "content.import")
        status = (await conn.execute(found)).scalar_one()
    assert status == "done"  # refused for good: not retried


async def test_runs_are_seen_by_those_who_can_read_their_space(
    client: httpx.AsyncClient, db: AsyncEngine, allow_loopback: None, large: str
) -> None:
    org_id, (admin, member, guest) = await factories.org_with_members(db, "read", None)
    shared = await factories.api_space(client, org_id, admin, visibility="unlisted")
    private = await factories.api_space(
        client, org_id, admin, visibility="private", default_level=None
    )
    seen = await queued_import(client, shared["id"], admin, large)
    clock.advance(timedelta(seconds=1))  # most recent first
    hidden = await queued_import(client, private["id"], admin, large)
    outsider = await factories.user(db)
    listing = f"/v1/org/{org_id}/imports"
    r = await client.get(listing, headers=admin.headers)
    assert [i["id"] for i in r.json()["items"]] == [hidden["id"], seen["id"]]
    r = await client.get(listing, headers=member.headers)
    assert r.json() == {"items": [seen], "count": 1}
    r = await client.get(f"{listing}/{seen['id']}", headers=member.headers)
    assert (r.status_code, r.json()) == (200, seen)
    missing = error(404, "Import run not found")
    for who, run_id in (
        (member, hidden["id"]),
        (guest, seen["id"]),
        (member, "zzRandomId0000000000"),
    ):
        r = await client.get(f"{listing}/{run_id}", headers=who.headers)
        assert (r.status_code, r.json()) == (404, missing), who
    r = await client.get(listing, headers=guest.headers)
    assert r.json() == {"items": [], "count": 0}
    not_member = error(404, "Organization not found")
    for path in (listing, f"{listing}/{seen['id']}"):
        r = await client.get(path, headers=outsider.headers)
        assert (r.status_code, r.json()) == (404, not_member), path
    # A run of another organization is not found through this one's path.
    other_org = await factories.organization(db, owner=admin, title="Other")
    r = await client.get(f"/v1/org/{other_org}/imports/{seen['id']}", headers=admin.headers)
    assert (r.status_code, r.json()) == (404, missing)


async def test_cli_import_folder(
    client: httpx.AsyncClient, db: AsyncEngine, settings: Settings, tmp_path: Path
) -> None:
    sid, admin, *_ = await setup(client, db)
    folder = tmp_path / "docs"
    (folder / "guide").mkdir(parents=True)
    (folder / "README.md").write_text("# Home\n\nWelcome.\n")
    (folder / "guide" / "README.md").write_text("# Guide\n\nStart here.\n")
    (folder / "guide" / "install.md").write_text("# Install\n\nRun it.\n")
    env = {"DOCSHELF_DATABASE_URL": settings.resolved_database_url}
    result = await asyncio.to_thread(
        CliRunner().invoke,
        main,
        ["--data-dir", str(settings.data_dir), "import", sid, str(folder), "--as", admin.email],
        env=env,
    )
    assert result.exit_code == 0, result.output
    assert "Imported into revision" in result.output
    pages = (await client.get(f"/v1/spaces/{sid}/content/pages", headers=admin.headers)).json()
    assert tree(pages["pages"]) == [
        ("Home", "document", []),
        ("Guide", "document", [("Install", "document", [])]),
    ]
    result = await asyncio.to_thread(
        CliRunner().invoke, main, ["import", sid, str(tmp_path / "nope")], env=env
    )
    assert result.exit_code != 0 and "no such file or folder" in result.output


async def test_an_imports_event_names_its_author(
    client: httpx.AsyncClient, db: AsyncEngine, site: tuple[str, Files], allow_loopback: None
) -> None:
    """space_content_updated for an import names the author as every other write's does (a
    tester saw no name in the webhook body and the audit log)."""
    base, files = site
    sid, admin, editor, _reader = await setup(client, db)
    files["/note.md"] = ("text/markdown", b"# Note\n\nHello.\n")
    r = await client.post(
        f"/v1/spaces/{sid}/content/import",
        json={"source": "markdown", "url": f"{base}/note.md"},
        headers=editor.headers,
    )
    assert r.status_code == 201, r.text
    org_id = (await client.get(f"/v1/spaces/{sid}", headers=admin.headers)).json()["organization"]
    r = await client.get(
        f"/v1/orgs/{org_id}/audit-log",
        params={"type": "space_content_updated", "actor": editor.id},
        headers=admin.headers,
    )
    [event] = r.json()["items"]
    assert event["actor"] == {"type": "user", "id": editor.id, "label": editor.name}
    assert event["payload"]["updatedBy"] == [
        {"object": "user", "id": editor.id, "displayName": editor.name}
    ]
