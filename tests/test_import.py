"""Imports over HTTP from a loopback server (allowed by DOCSHELF_FETCH_ALLOWED_HOSTS), the SSRF
refusals, the durable job for large imports, and the CLI."""

from __future__ import annotations

import asyncio
import io
import threading
import zipfile
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner
from fastapi import FastAPI
from sqlalchemy.ext.asyncio import AsyncEngine

from docshelf.cli.main import main
from docshelf.config import Settings
from docshelf.worker.runner import JobRunner
from tests import factories
from tests.helpers import error, snapshot

Files = dict[str, tuple[str, bytes]]


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
        b"<body><h1>Web page</h1><p>Some <b>bold</b> text.</p></body></html>",
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
    web = pages["pages"][1]
    text = (
        await client.get(
            f"/v1/spaces/{sid}/content/page/{web['id']}?format=markdown", headers=reader.headers
        )
    ).json()["markdown"]
    assert "**bold**" in text and "evil" not in text
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


async def test_large_imports_run_as_a_job(
    client: httpx.AsyncClient,
    db: AsyncEngine,
    site: tuple[str, Files],
    allow_loopback: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from docshelf.imports import service

    monkeypatch.setattr(service, "LARGE_IMPORT", 2)
    base, files = site
    sid, admin, *_ = await setup(client, db)
    files["/many.zip"] = (
        "application/zip",
        zip_of({f"p{i}.md": f"# Page {i}\n".encode() for i in range(3)}),
    )
    r = await client.post(
        f"/v1/spaces/{sid}/content/import",
        json={"url": base + "/many.zip", "source": "zip"},
        headers=admin.headers,
    )
    assert r.status_code == 201, r.text
    revision = r.json()["revision"]
    assert r.json()["importedResources"] == 3
    head = (await client.get(f"/v1/spaces/{sid}", headers=admin.headers)).json()["revision"]
    assert head != revision  # not applied yet
    runner = JobRunner(db)
    while await runner.run_once():
        pass
    head = (await client.get(f"/v1/spaces/{sid}", headers=admin.headers)).json()["revision"]
    assert head == revision
    pages = (await client.get(f"/v1/spaces/{sid}/content/pages", headers=admin.headers)).json()
    assert [p["title"] for p in pages["pages"]] == ["Page 0", "Page 1", "Page 2"]


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
