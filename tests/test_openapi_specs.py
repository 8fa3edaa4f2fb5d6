"""OpenAPI specs over HTTP: the ten operations, processing by the job (never inline), versions,
the refresh schedule, permissions, and hostile documents, each failing with its error code.

URL sources are served by a loopback server, allowed by the fetch allowance as in the import
tests; every other private address stays refused."""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
import yaml
from fastapi import FastAPI
from sqlalchemy.ext.asyncio import AsyncEngine

from docshelf.config import Settings
from docshelf.kit.clock import clock
from docshelf.models import jobs, openapi_spec_contents
from docshelf.openapi_spec import processing
from docshelf.openapi_spec.parsing import MAX_SOURCE_BYTES
from docshelf.openapi_spec.tasks import REFRESH, REFRESH_SWEEP
from docshelf.worker.registry import JobEnv
from docshelf.worker.runner import JobRunner
from tests import factories
from tests.conftest import BASE
from tests.helpers import TS, error, snapshot

CORPUS = Path(__file__).parent / "openapi_corpus"
MINIMAL = "openapi: 3.0.3\ninfo:\n  title: Pets\n  version: '1'\npaths: {}\n"
MINIMAL_DOC = {"openapi": "3.0.3", "info": {"title": "Pets", "version": "1"}, "paths": {}}


# -- a loopback server ------------------------------------------------------------------------


class Site:
    def __init__(self) -> None:
        # path -> body, or a callable writing the answer itself
        self.files: dict[str, Any] = {}
        self.hits: list[str] = []
        self.base = ""


@pytest.fixture
def site() -> Iterator[Site]:
    state = Site()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            state.hits.append(self.path)
            found = state.files.get(self.path)
            if found is None:
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            if callable(found):
                found(self)
                return
            data = found.encode() if isinstance(found, str) else found
            self.send_response(200)
            self.send_header("Content-Type", "application/yaml")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    state.base = f"http://127.0.0.1:{server.server_address[1]}"
    yield state
    server.shutdown()
    server.server_close()


@pytest.fixture
def loopback(app: FastAPI, settings: Settings) -> Iterator[Settings]:
    """Loopback fetches allowed, for the app and for the jobs."""
    allowed = settings.model_copy(
        update={"fetch_allowed_hosts": "127.0.0.1", "openapi_fetch_timeout": 10}
    )
    app.state.settings = allowed
    yield allowed
    app.state.settings = settings


# -- helpers ----------------------------------------------------------------------------------


async def run_jobs(db: AsyncEngine, job_env: JobEnv) -> None:
    await JobRunner(db, job_env).drain()


def spec_url(org_id: str, slug: str) -> str:
    return f"/v1/orgs/{org_id}/openapi/{slug}"


def spec_body(
    org_id: str,
    slug: str,
    spec_id: str,
    *,
    state: str,
    edit: bool = True,
    source_url: str | None = None,
    last_version: str | None = None,
    processed: bool = False,
    error_code: str | None = None,
    errors: list[dict[str, str]] | None = None,
    error_count: int = 0,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "object": "openapi-spec",
        "id": spec_id,
        "createdAt": TS,
        "updatedAt": TS,
        "slug": slug,
        "processingState": state,
        "lastProcessedErrors": errors or [],
        "lastProcessedErrorCount": error_count,
        "permissions": {"view": True, "edit": edit, "delete": edit},
        "urls": {
            "location": f"{BASE}{spec_url(org_id, slug)}",
            "app": f"{BASE}/o/{org_id}/openapi/{slug}",
        },
    }
    if source_url is not None:
        body["sourceURL"] = source_url
    if last_version is not None:
        body["lastVersion"] = last_version
    if processed:
        body["lastProcessedAt"] = TS
    if error_code is not None:
        body["lastProcessErrorCode"] = error_code
    return body


async def create(
    client: httpx.AsyncClient, org_id: str, who: factories.Who, slug: str, source: dict[str, str]
) -> dict[str, Any]:
    r = await client.post(
        f"/v1/orgs/{org_id}/openapi", json={"slug": slug, "source": source}, headers=who.headers
    )
    assert r.status_code == 201, r.text
    assert r.headers["location"] == f"{BASE}{spec_url(org_id, slug)}"
    created: dict[str, Any] = r.json()
    return created


async def processed(
    client: httpx.AsyncClient,
    db: AsyncEngine,
    org_id: str,
    who: factories.Who,
    slug: str,
    job_env: JobEnv,
) -> dict[str, Any]:
    await run_jobs(db, job_env=job_env)
    r = await client.get(spec_url(org_id, slug), headers=who.headers)
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    assert body["processingState"] == "complete", body
    return body


async def failure(
    client: httpx.AsyncClient,
    db: AsyncEngine,
    org_id: str,
    who: factories.Who,
    slug: str,
    source: dict[str, str],
    job_env: JobEnv,
) -> tuple[str, list[dict[str, str]]]:
    """Creates a spec from `source`, processes it, and returns its error code and errors; a
    failed processing makes no version."""
    await create(client, org_id, who, slug, source)
    body = await processed(client, db, org_id, who, slug, job_env=job_env)
    assert "lastVersion" not in body, body
    r = await client.get(f"{spec_url(org_id, slug)}/versions", headers=who.headers)
    assert r.json() == {"items": [], "count": 0}
    assert body["lastProcessedErrorCount"] >= 1
    return body["lastProcessErrorCode"], body["lastProcessedErrors"]


async def setup(db: AsyncEngine) -> tuple[str, factories.Who, factories.Who, factories.Who]:
    org_id, (admin, reader, guest) = await factories.org_with_members(db, "read", None)
    return org_id, admin, reader, guest


# -- the operations ---------------------------------------------------------------------------


async def test_text_source_is_processed_by_the_job_into_a_version(
    client: httpx.AsyncClient, db: AsyncEngine, job_env: JobEnv
) -> None:
    org_id, admin, reader, _ = await setup(db)
    created = await create(client, org_id, admin, "pets", {"text": MINIMAL})
    spec_id = created["id"]
    # Nothing is parsed in the request: the spec waits for its job.
    assert created == spec_body(org_id, "pets", spec_id, state="pending")
    r = await client.get(f"{spec_url(org_id, 'pets')}/versions/latest", headers=admin.headers)
    assert r.status_code == 404
    assert r.json() == error(404, "OpenAPI spec version not found")

    await run_jobs(db, job_env=job_env)
    r = await client.get(f"{spec_url(org_id, 'pets')}/versions/latest", headers=reader.headers)
    assert r.status_code == 200, r.text
    version = r.json()
    version_id = version["id"]
    location = f"{BASE}{spec_url(org_id, 'pets')}/versions/{version_id}"
    assert version == {
        "object": "openapi-spec-version",
        "id": version_id,
        "createdAt": TS,
        "url": f"{location}/content",
        "urls": {"location": location},
    }
    r = await client.get(spec_url(org_id, "pets"), headers=reader.headers)
    assert r.json() == spec_body(
        org_id,
        "pets",
        spec_id,
        state="complete",
        edit=False,
        last_version=version_id,
        processed=True,
    )
    r = await client.get(f"{spec_url(org_id, 'pets')}/versions", headers=reader.headers)
    assert r.json() == {"items": [version], "count": 1}
    r = await client.get(f"{spec_url(org_id, 'pets')}/versions/{version_id}", headers=admin.headers)
    assert r.json() == version
    expected_content = {
        "filesystem": {"entrypoint": "openapi.yaml", "files": {"openapi.yaml": MINIMAL_DOC}},
        "url": f"{location}/content",
        "urls": {"source": f"{location}/content", "public": None},
    }
    for path in ("versions/latest/content", f"versions/{version_id}/content"):
        r = await client.get(f"{spec_url(org_id, 'pets')}/{path}", headers=reader.headers)
        assert r.status_code == 200, r.text
        assert r.json() == expected_content
    r = await client.get(f"/v1/orgs/{org_id}/openapi", headers=reader.headers)
    assert r.json() == {"items": [r.json()["items"][0]], "count": 1}
    assert r.json()["items"][0]["id"] == spec_id


@pytest.mark.parametrize(
    ("name", "fmt"),
    [("petstore-3.0.yaml", "yaml"), ("petstore-2.0.json", "json"), ("webhook-3.1.yaml", "yaml")],
)
async def test_corpus_of_public_documents(
    client: httpx.AsyncClient, db: AsyncEngine, name: str, fmt: str, job_env: JobEnv
) -> None:
    org_id, admin, _, _ = await setup(db)
    text = (CORPUS / name).read_text()
    await create(client, org_id, admin, "doc", {"text": text})
    body = await processed(client, db, org_id, admin, "doc", job_env=job_env)
    assert (body["lastProcessedErrorCount"], body.get("lastProcessErrorCode")) == (0, None)
    r = await client.get(
        f"{spec_url(org_id, 'doc')}/versions/latest/content", headers=admin.headers
    )
    entry = f"openapi.{fmt}"
    expected = json.loads(text) if fmt == "json" else yaml.safe_load(text)
    assert r.json()["filesystem"] == {"entrypoint": entry, "files": {entry: expected}}


async def test_yaml_values_become_json(
    client: httpx.AsyncClient, db: AsyncEngine, job_env: JobEnv
) -> None:
    """Unquoted status codes, dates and merge keys: what YAML makes of them is turned into the
    JSON an OpenAPI document means."""
    org_id, admin, _, _ = await setup(db)
    text = (
        "openapi: 3.0.3\ninfo:\n  title: Dates\n  version: 2024-01-31\npaths:\n  /a:\n"
        "    get:\n      responses:\n        200: &ok\n          description: fine\n"
        "        201:\n          <<: *ok\n          headers: {}\n"
    )
    await create(client, org_id, admin, "yaml", {"text": text})
    body = await processed(client, db, org_id, admin, "yaml", job_env=job_env)
    assert body["lastProcessedErrorCount"] == 0, body
    r = await client.get(
        f"{spec_url(org_id, 'yaml')}/versions/latest/content", headers=admin.headers
    )
    assert r.json()["filesystem"]["files"]["openapi.yaml"] == {
        "openapi": "3.0.3",
        "info": {"title": "Dates", "version": "2024-01-31"},
        "paths": {
            "/a": {
                "get": {
                    "responses": {
                        "200": {"description": "fine"},
                        "201": {"description": "fine", "headers": {}},
                    }
                }
            }
        },
    }


async def test_files_referring_to_each_other(
    client: httpx.AsyncClient, db: AsyncEngine, site: Site, loopback: Settings, job_env: JobEnv
) -> None:
    """Schemas that contain each other across files are a valid cycle: each file is fetched once."""
    org_id, admin, _, _ = await setup(db)
    site.files["/a.yaml"] = (
        "openapi: 3.0.3\ninfo: {title: x, version: '1'}\npaths: {}\ncomponents:\n  schemas:\n"
        "    Node: {type: object, properties: {child: {$ref: 'b.yaml#/Leaf'}}}\n"
    )
    site.files["/b.yaml"] = (
        "Leaf: {type: object, properties: {parent: {$ref: 'a.yaml#/components/schemas/Node'}}}\n"
    )
    await create(client, org_id, admin, "cycle", {"url": f"{site.base}/a.yaml"})
    body = await processed(client, db, org_id, admin, "cycle", job_env=job_env)
    assert body["lastProcessedErrorCount"] == 0, body
    assert sorted(site.hits) == ["/a.yaml", "/b.yaml"]


async def test_url_source_with_referenced_files(
    client: httpx.AsyncClient, db: AsyncEngine, site: Site, loopback: Settings, job_env: JobEnv
) -> None:
    org_id, admin, _, _ = await setup(db)
    site.files["/api/split.yaml"] = (CORPUS / "split-3.0.yaml").read_text()
    site.files["/api/common.yaml"] = (CORPUS / "common.yaml").read_text()
    url = f"{site.base}/api/split.yaml"
    created = await create(client, org_id, admin, "split", {"url": url})
    assert created == spec_body(org_id, "split", created["id"], state="pending", source_url=url)
    assert site.hits == []  # fetched by the job, not by the request
    body = await processed(client, db, org_id, admin, "split", job_env=job_env)
    assert body == spec_body(
        org_id,
        "split",
        created["id"],
        state="complete",
        source_url=url,
        last_version=body["lastVersion"],
        processed=True,
    )
    r = await client.get(
        f"{spec_url(org_id, 'split')}/versions/latest/content", headers=admin.headers
    )
    assert r.json() == {
        "filesystem": {
            "entrypoint": url,
            "files": {
                url: yaml.safe_load(site.files["/api/split.yaml"]),
                f"{site.base}/api/common.yaml": yaml.safe_load(site.files["/api/common.yaml"]),
            },
        },
        "url": url,
        "urls": {"source": url, "public": None},
    }
    r = await client.get(f"{spec_url(org_id, 'split')}/versions/latest", headers=admin.headers)
    assert r.json()["url"] == url


async def test_new_version_only_when_the_content_changes(
    client: httpx.AsyncClient, db: AsyncEngine, job_env: JobEnv
) -> None:
    org_id, admin, _, _ = await setup(db)
    await create(client, org_id, admin, "pets", {"text": MINIMAL})
    first = (await processed(client, db, org_id, admin, "pets", job_env=job_env))["lastVersion"]
    url = spec_url(org_id, "pets")
    # The same document again, with other comments: the same content.
    r = await client.put(
        url, json={"source": {"text": "# again\n" + MINIMAL}}, headers=admin.headers
    )
    assert r.status_code == 200, r.text
    assert r.json()["processingState"] == "pending"
    assert (await processed(client, db, org_id, admin, "pets", job_env=job_env))[
        "lastVersion"
    ] == first
    r = await client.get(f"{url}/versions", headers=admin.headers)
    assert [v["id"] for v in r.json()["items"]] == [first]
    # Changed content: a second version, the latest; the first is still readable as it was.
    changed = MINIMAL.replace("title: Pets", "title: Pets v2")
    r = await client.put(url, json={"source": {"text": changed}}, headers=admin.headers)
    second = (await processed(client, db, org_id, admin, "pets", job_env=job_env))["lastVersion"]
    assert second != first
    # Back to the first content: a third version, whose content row is the first one's.
    r = await client.put(url, json={"source": {"text": MINIMAL}}, headers=admin.headers)
    third = (await processed(client, db, org_id, admin, "pets", job_env=job_env))["lastVersion"]
    assert third not in (first, second)
    r = await client.get(f"{url}/versions", headers=admin.headers)
    assert [v["id"] for v in r.json()["items"]] == [third, second, first]
    assert r.json()["count"] == 3
    r = await client.get(f"{url}/versions", params={"limit": 2}, headers=admin.headers)
    assert [v["id"] for v in r.json()["items"]] == [third, second]
    r = await client.get(
        f"{url}/versions",
        params={"limit": 2, "page": r.json()["next"]["page"]},
        headers=admin.headers,
    )
    assert r.json() == {"items": [r.json()["items"][0]], "count": 3}
    assert r.json()["items"][0]["id"] == first
    titles = []
    for version in (first, second, third):
        r = await client.get(f"{url}/versions/{version}/content", headers=admin.headers)
        titles.append(r.json()["filesystem"]["files"]["openapi.yaml"]["info"]["title"])
    assert titles == ["Pets", "Pets v2", "Pets"]
    async with db.connect() as conn:
        contents = (
            await conn.execute(sa.select(sa.func.count()).select_from(openapi_spec_contents))
        ).scalar_one()
    assert contents == 2


async def test_only_the_newest_source_becomes_a_version(
    client: httpx.AsyncClient, db: AsyncEngine, job_env: JobEnv
) -> None:
    org_id, admin, _, _ = await setup(db)
    await create(client, org_id, admin, "pets", {"text": MINIMAL})
    newest = MINIMAL.replace("title: Pets", "title: Newest")
    r = await client.put(
        spec_url(org_id, "pets"), json={"source": {"text": newest}}, headers=admin.headers
    )
    assert r.status_code == 200
    await processed(client, db, org_id, admin, "pets", job_env=job_env)
    r = await client.get(f"{spec_url(org_id, 'pets')}/versions", headers=admin.headers)
    assert r.json()["count"] == 1
    r = await client.get(
        f"{spec_url(org_id, 'pets')}/versions/latest/content", headers=admin.headers
    )
    assert r.json()["filesystem"]["files"]["openapi.yaml"]["info"]["title"] == "Newest"


async def test_put_creates_then_updates(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    org_id, admin, _, _ = await setup(db)
    url = spec_url(org_id, "new-spec")
    r = await client.put(url, json={"source": {"text": MINIMAL}}, headers=admin.headers)
    assert r.status_code == 201, r.text
    assert r.headers["location"] == f"{BASE}{url}"
    spec_id = r.json()["id"]
    assert r.json() == spec_body(org_id, "new-spec", spec_id, state="pending")
    r = await client.put(
        url, json={"source": {"url": "https://example.com/api.yaml"}}, headers=admin.headers
    )
    assert r.status_code == 200, r.text
    assert r.json() == spec_body(
        org_id, "new-spec", spec_id, state="pending", source_url="https://example.com/api.yaml"
    )
    async with db.connect() as conn:
        queued = (
            (await conn.execute(sa.select(jobs.c.payload).where(jobs.c.kind == "openapi.process")))
            .scalars()
            .all()
        )
    assert sorted(p["generation"] for p in queued) == [1, 2]


async def test_delete_removes_the_spec_and_its_versions(
    client: httpx.AsyncClient, db: AsyncEngine, job_env: JobEnv
) -> None:
    org_id, admin, reader, _ = await setup(db)
    await create(client, org_id, admin, "pets", {"text": MINIMAL})
    await processed(client, db, org_id, admin, "pets", job_env=job_env)
    r = await client.delete(spec_url(org_id, "pets"), headers=reader.headers)
    assert r.status_code == 403
    r = await client.delete(spec_url(org_id, "pets"), headers=admin.headers)
    assert r.status_code == 205 and r.content == b""
    for path in ("", "/versions", "/versions/latest", "/versions/latest/content"):
        r = await client.get(spec_url(org_id, "pets") + path, headers=admin.headers)
        assert r.json() == error(404, "OpenAPI spec not found"), path
    async with db.connect() as conn:
        left = (
            await conn.execute(sa.select(sa.func.count()).select_from(openapi_spec_contents))
        ).scalar_one()
    assert left == 0
    # A job still queued for a deleted spec does nothing.
    await run_jobs(db, job_env=job_env)


async def test_listing_pages(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    org_id, admin, _, _ = await setup(db)
    ids = [
        (await create(client, org_id, admin, f"spec-{n}", {"text": MINIMAL}))["id"]
        for n in range(3)
    ]
    seen: list[str] = []
    page: str | None = None
    while True:
        params: dict[str, Any] = {"limit": 2, **({"page": page} if page else {})}
        r = await client.get(f"/v1/orgs/{org_id}/openapi", params=params, headers=admin.headers)
        assert r.json()["count"] == 3
        seen += [item["id"] for item in r.json()["items"]]
        page = r.json().get("next", {}).get("page")
        if page is None:
            break
    assert sorted(seen) == sorted(ids) and len(seen) == 3


# -- permissions and refusals -----------------------------------------------------------------


async def test_permissions(client: httpx.AsyncClient, db: AsyncEngine, job_env: JobEnv) -> None:
    org_id, admin, reader, guest = await setup(db)
    outsider = await factories.user(db)
    await create(client, org_id, admin, "pets", {"text": MINIMAL})
    await run_jobs(db, job_env=job_env)
    before = await snapshot(db)
    body = {"source": {"text": MINIMAL}}
    cases = [
        (reader, "POST", f"/v1/orgs/{org_id}/openapi", {"slug": "x", **body}, 403,
         "Only members who can create content can create OpenAPI specs"),
        (reader, "PUT", spec_url(org_id, "pets"), body, 403,
         "Only members who can create content can create or update OpenAPI specs"),
        (reader, "PUT", spec_url(org_id, "other"), body, 403,
         "Only members who can create content can create or update OpenAPI specs"),
        (guest, "GET", f"/v1/orgs/{org_id}/openapi", None, 403, "Guests cannot view OpenAPI specs"),
        (guest, "GET", spec_url(org_id, "pets"), None, 403, "Guests cannot view OpenAPI specs"),
        (outsider, "GET", spec_url(org_id, "pets"), None, 404, "Organization not found"),
        (outsider, "PUT", spec_url(org_id, "Bad Slug"), body, 404, "Organization not found"),
        (admin, "GET", spec_url(org_id, "nope"), None, 404, "OpenAPI spec not found"),
        (admin, "GET", f"{spec_url(org_id, 'pets')}/versions/nope", None, 404,
         "OpenAPI spec version not found"),
        (admin, "POST", f"/v1/orgs/{org_id}/openapi", {"slug": "pets", **body}, 409,
         "An OpenAPI spec with the slug 'pets' already exists"),
        (admin, "PUT", spec_url(org_id, "Bad-Slug"), body, 400,
         "Invalid path parameter 'specSlug': must be 1 to 100 lower-case letters, digits and "
         "single hyphens (^[a-z0-9]+(?:-[a-z0-9]+)*$)"),
        (admin, "PUT", spec_url(org_id, "a" * 101), body, 400,
         "Invalid path parameter 'specSlug': must be 1 to 100 lower-case letters, digits and "
         "single hyphens (^[a-z0-9]+(?:-[a-z0-9]+)*$)"),
    ]  # fmt: skip
    for who, method, url, json_body, status, message in cases:
        r = await client.request(method, url, json=json_body, headers=who.headers)
        assert (r.status_code, r.json()) == (status, error(status, message)), (method, url)
    assert await snapshot(db) == before
    r = await client.get(spec_url(org_id, "pets"), headers=reader.headers)
    assert r.json()["permissions"] == {"view": True, "edit": False, "delete": False}


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"slug": "x"}, "Missing required body field 'source'"),
        ({"slug": "x", "source": {}}, "Invalid body field 'source': give either 'url' or 'text'"),
        (
            {"slug": "x", "source": {"text": ""}},
            "Invalid body field 'source.text': String should have at least 1 character",
        ),
        (
            {"slug": "x", "source": {"url": "ftp://example.com/a.yaml"}},
            "Invalid body field 'source.url': String should match pattern '^https?://\\S+$'",
        ),
        (
            {"slug": "x", "source": {"url": "https://example.com/a.yaml", "text": MINIMAL}},
            "Invalid body field 'source': give either 'url' or 'text'",
        ),
        (
            {"slug": "x", "source": {"file": "a.yaml"}},
            "Unknown body field 'source.file'",
        ),
        (
            {"slug": "Upper", "source": {"text": MINIMAL}},
            "Invalid body field 'slug': String should match pattern '^[a-z0-9]+(?:-[a-z0-9]+)*$'",
        ),
        (
            {"slug": "a--b", "source": {"text": MINIMAL}},
            "Invalid body field 'slug': String should match pattern '^[a-z0-9]+(?:-[a-z0-9]+)*$'",
        ),
        (
            {"slug": "x", "source": {"text": "a\x00b"}},
            "Invalid body field 'source.text': control characters are not allowed",
        ),
    ],
)
async def test_bad_bodies_change_nothing(
    client: httpx.AsyncClient, db: AsyncEngine, body: dict[str, Any], message: str
) -> None:
    org_id, admin, _, _ = await setup(db)
    before = await snapshot(db)
    r = await client.post(f"/v1/orgs/{org_id}/openapi", json=body, headers=admin.headers)
    assert (r.status_code, r.json()) == (400, error(400, message))
    assert await snapshot(db) == before


async def test_text_keeps_line_breaks_and_tabs(
    client: httpx.AsyncClient, db: AsyncEngine, job_env: JobEnv
) -> None:
    org_id, admin, _, _ = await setup(db)
    text = (
        '{\n\t"openapi": "3.0.3",\r\n\t"info": {"title": "Pets", "version": "1"},\n\t"paths": {}\n}'
    )
    await create(client, org_id, admin, "tabs", {"text": text})
    body = await processed(client, db, org_id, admin, "tabs", job_env=job_env)
    assert body["lastProcessedErrorCount"] == 0


# -- refresh ----------------------------------------------------------------------------------


async def test_url_sources_are_refetched_on_schedule(
    client: httpx.AsyncClient, db: AsyncEngine, site: Site, loopback: Settings, job_env: JobEnv
) -> None:
    org_id, admin, _, _ = await setup(db)
    site.files["/api.yaml"] = MINIMAL
    await create(client, org_id, admin, "live", {"url": f"{site.base}/api.yaml"})
    await create(client, org_id, admin, "text", {"text": MINIMAL})
    first = (await processed(client, db, org_id, admin, "live", job_env=job_env))["lastVersion"]
    runner = JobRunner(db, job_env)
    await runner.ensure_schedules()
    site.files["/api.yaml"] = MINIMAL.replace("Pets", "Pets again")
    site.hits.clear()
    # The sweep runs every REFRESH_SWEEP; nothing is due before the interval has passed.
    clock.advance(REFRESH_SWEEP)
    await runner.drain()
    assert site.hits == []
    clock.advance(timedelta(hours=loopback.openapi_refresh_hours))
    await runner.ensure_schedules()
    clock.advance(REFRESH_SWEEP)
    await runner.drain()
    assert site.hits == ["/api.yaml"]
    body = (await client.get(spec_url(org_id, "live"), headers=admin.headers)).json()
    assert body["processingState"] == "complete"
    assert body["lastVersion"] != first
    r = await client.get(f"{spec_url(org_id, 'live')}/versions", headers=admin.headers)
    assert r.json()["count"] == 2
    # Text sources have nothing to fetch: never refreshed.
    r = await client.get(f"{spec_url(org_id, 'text')}/versions", headers=admin.headers)
    assert r.json()["count"] == 1
    async with db.connect() as conn:
        kinds = (await conn.execute(sa.select(jobs.c.kind, jobs.c.status))).all()
    assert (REFRESH, "done") in kinds


async def test_state_is_progress_while_the_job_works(
    client: httpx.AsyncClient, db: AsyncEngine, site: Site, loopback: Settings, job_env: JobEnv
) -> None:
    org_id, admin, _, _ = await setup(db)
    fetched, release = threading.Event(), threading.Event()

    def held(handler: BaseHTTPRequestHandler) -> None:
        fetched.set()
        release.wait(30)
        handler.send_response(200)
        handler.send_header("Content-Length", str(len(MINIMAL)))
        handler.end_headers()
        handler.wfile.write(MINIMAL.encode())

    site.files["/held.yaml"] = held
    await create(client, org_id, admin, "held", {"url": f"{site.base}/held.yaml"})
    running = asyncio.create_task(run_jobs(db, job_env=job_env))
    try:
        await asyncio.to_thread(fetched.wait, 30)
        r = await client.get(spec_url(org_id, "held"), headers=admin.headers)
        assert r.json()["processingState"] == "progress"
    finally:
        release.set()
        await running
    body = (await client.get(spec_url(org_id, "held"), headers=admin.headers)).json()
    assert (body["processingState"], body["lastProcessedErrorCount"]) == ("complete", 0)


async def test_put_of_the_same_url_fetches_again(
    client: httpx.AsyncClient, db: AsyncEngine, site: Site, loopback: Settings, job_env: JobEnv
) -> None:
    org_id, admin, _, _ = await setup(db)
    site.files["/api.yaml"] = MINIMAL
    url = f"{site.base}/api.yaml"
    await create(client, org_id, admin, "live", {"url": url})
    await processed(client, db, org_id, admin, "live", job_env=job_env)
    site.files["/api.yaml"] = MINIMAL.replace("Pets", "Cats")
    r = await client.put(
        spec_url(org_id, "live"), json={"source": {"url": url}}, headers=admin.headers
    )
    assert r.status_code == 200
    await processed(client, db, org_id, admin, "live", job_env=job_env)
    assert site.hits == ["/api.yaml", "/api.yaml"]
    r = await client.get(
        f"{spec_url(org_id, 'live')}/versions/latest/content", headers=admin.headers
    )
    assert r.json()["filesystem"]["files"][url]["info"]["title"] == "Cats"


# -- hostile and broken documents -------------------------------------------------------------

BILLION_LAUGHS = "openapi: 3.0.3\n" + "".join(
    f"l{n}: &l{n} [{', '.join([f'*l{n - 1}'] * 9) if n else ', '.join(['lol'] * 9)}]\n"
    for n in range(10)
)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (BILLION_LAUGHS, "more than 1000000 nodes once YAML aliases are expanded"),
        ("a: &a\n  b: *a\n", "a YAML alias refers to a node that contains it"),
        ("[" * 50_000 + "]" * 50_000, "nested deeper than 100 levels"),
        (
            "a:\n" + "".join(" " * n + "b:\n" for n in range(1, 150)),
            "nested deeper than 100 levels",
        ),
        ('{"a": ' * 5000 + "1" + "}" * 5000, "nested deeper than 100 levels"),
        ("openapi: [unclosed\n", "invalid YAML: "),
        ("- just\n- a list\n", "the document is not an object (a mapping of fields)"),
        (
            "openapi: 3.0.3\ninfo: {title: x, version: '1'}\npaths: {}\ncomponents:\n  schemas:\n"
            "    A: {$ref: '#/components/schemas/B'}\n    B: {$ref: '#/components/schemas/A'}\n",
            "$ref '#/components/schemas/A' is circular: it leads back to itself",
        ),
        (
            "openapi: 3.0.3\ninfo: {title: x, version: '1'}\npaths: {}\ncomponents:\n  schemas:\n"
            "    A: {$ref: '#/components/schemas/Missing'}\n",
            "$ref '#/components/schemas/Missing' points at nothing",
        ),
        (
            "openapi: 3.0.3\ninfo: {title: x, version: '1'}\npaths: {}\ncomponents:\n  schemas:\n"
            "    A: {$ref: 'common.yaml#/Thing'}\n",
            "$ref 'common.yaml#/Thing' is relative, and a specification given as text has no "
            "location to resolve it against",
        ),
    ],
    ids=[
        "billion-laughs",
        "recursive-alias",
        "deep-flow",
        "deep-block",
        "deep-json",
        "syntax",
        "not-an-object",
        "ref-loop",
        "ref-missing",
        "relative-ref-in-text",
    ],
)
async def test_hostile_texts_are_parse_errors(
    client: httpx.AsyncClient, db: AsyncEngine, text: str, message: str, job_env: JobEnv
) -> None:
    org_id, admin, _, _ = await setup(db)
    code, errors = await failure(client, db, org_id, admin, "bad", {"text": text}, job_env=job_env)
    assert code == "PARSE_ERROR"
    assert len(errors) == 1 and errors[0]["message"].startswith(message), errors


async def test_validation_never_fetches(
    client: httpx.AsyncClient, db: AsyncEngine, site: Site, loopback: Settings, job_env: JobEnv
) -> None:
    """A `$ref` inside data (a default value) is no reference to fetch; the validator still
    follows it, and is served only the files already fetched: nothing reaches the network."""
    org_id, admin, _, _ = await setup(db)
    site.files["/x.yaml"] = "A: {type: string}\n"
    target = f"{site.base}/x.yaml#/A"
    text = (
        "openapi: 3.1.0\ninfo: {title: x, version: '1'}\npaths: {}\ncomponents:\n  schemas:\n"
        f"    A: {{type: object, default: {{$ref: '{target}'}}}}\n"
    )
    got = await failure(client, db, org_id, admin, "data", {"text": text}, job_env=job_env)
    assert got == (
        "PARSE_ERROR",
        [{"message": f"cannot validate: $ref '{target}' cannot be resolved"}],
    )
    assert site.hits == []


async def test_invalid_openapi_lists_the_validator_errors(
    client: httpx.AsyncClient, db: AsyncEngine, job_env: JobEnv
) -> None:
    org_id, admin, _, _ = await setup(db)
    text = "openapi: 3.0.3\ninfo:\n  title: No version\npaths:\n  /a:\n    get: {}\n"
    await create(client, org_id, admin, "bad", {"text": text})
    body = await processed(client, db, org_id, admin, "bad", job_env=job_env)
    assert body["lastProcessErrorCode"] == "PARSE_ERROR"
    assert body["lastProcessedErrorCount"] == 2
    assert body["lastProcessedErrors"] == [
        {"message": '"version" is a required property (at /info)', "code": "INVALID"},
        {"message": '"responses" is a required property (at /paths/~1a/get)', "code": "INVALID"},
    ]
    code, errors = await failure(
        client, db, org_id, admin, "other", {"text": "title: not openapi\n"}, job_env=job_env
    )
    assert code == "PARSE_ERROR" and errors[0]["code"] == "UNKNOWN_VERSION"


async def test_a_failure_keeps_the_last_version(
    client: httpx.AsyncClient, db: AsyncEngine, job_env: JobEnv
) -> None:
    org_id, admin, _, _ = await setup(db)
    await create(client, org_id, admin, "pets", {"text": MINIMAL})
    good = (await processed(client, db, org_id, admin, "pets", job_env=job_env))["lastVersion"]
    r = await client.put(
        spec_url(org_id, "pets"), json={"source": {"text": "[oops"}}, headers=admin.headers
    )
    assert r.status_code == 200
    body = await processed(client, db, org_id, admin, "pets", job_env=job_env)
    assert (body["lastVersion"], body["lastProcessErrorCode"]) == (good, "PARSE_ERROR")
    r = await client.put(
        spec_url(org_id, "pets"), json={"source": {"text": MINIMAL}}, headers=admin.headers
    )
    body = await processed(client, db, org_id, admin, "pets", job_env=job_env)
    assert body["lastVersion"] == good
    assert (body["lastProcessedErrors"], body["lastProcessedErrorCount"]) == ([], 0)
    assert "lastProcessErrorCode" not in body


def _slow(seconds: float) -> Any:
    def answer(handler: BaseHTTPRequestHandler) -> None:
        time.sleep(seconds)
        handler.send_response(200)
        handler.send_header("Content-Length", str(len(MINIMAL)))
        handler.end_headers()
        with contextlib.suppress(OSError):  # the fetcher gave up long ago
            handler.wfile.write(MINIMAL.encode())

    return answer


def _huge(declared: bool) -> Any:
    """50 MB of YAML, sent in 1 MB chunks, with or without its length declared."""

    def answer(handler: BaseHTTPRequestHandler) -> None:
        chunk = b"# padding\n" * (1024 * 1024 // 10)
        handler.send_response(200)
        if declared:
            handler.send_header("Content-Length", str(50 * len(chunk)))
        handler.end_headers()
        try:
            for _ in range(50):
                handler.wfile.write(chunk)
        except OSError:
            pass  # the fetcher hung up past its cap

    return answer


async def test_hostile_urls_fail_with_their_codes(
    client: httpx.AsyncClient,
    db: AsyncEngine,
    site: Site,
    loopback: Settings,
    app: FastAPI,
    job_env: JobEnv,
) -> None:
    org_id, admin, _, _ = await setup(db)
    ref_doc = "openapi: 3.0.3\ninfo: {title: x, version: '1'}\npaths: {}\ncomponents:\n  schemas:\n"
    site.files["/big.yaml"] = _huge(declared=True)
    site.files["/big-stream.yaml"] = _huge(declared=False)
    site.files["/private-ref.yaml"] = ref_doc + "    A: {$ref: 'http://10.0.0.1/common.yaml#/A'}\n"
    site.files["/metadata-ref.yaml"] = (
        ref_doc + "    A: {$ref: 'http://169.254.169.254/latest/meta-data#/A'}\n"
    )
    site.files["/file-ref.yaml"] = ref_doc + "    A: {$ref: 'file:///etc/passwd#/A'}\n"
    # Two files whose references only point at each other: a loop across files.
    site.files["/loop-a.yaml"] = ref_doc + "    A: {$ref: 'loop-b.yaml#/B'}\n"
    site.files["/loop-b.yaml"] = "B: {$ref: 'loop-a.yaml#/components/schemas/A'}\n"
    site.files["/many.yaml"] = ref_doc + "".join(
        f"    S{n}: {{$ref: 'part{n}.yaml#/S'}}\n" for n in range(25)
    )
    for n in range(25):
        site.files[f"/part{n}.yaml"] = "S: {type: string}\n"
    spec, ref = "Fetching the specification: ", "Fetching the referenced file "
    too_large = f"URL refused: response larger than {MAX_SOURCE_BYTES} bytes"
    cases = [
        ("/nowhere.yaml", "FETCH_ERROR", f"{spec}URL fetch failed: the server answered HTTP 404"),
        ("/big.yaml", "FETCH_ERROR", spec + too_large),
        ("/big-stream.yaml", "FETCH_ERROR", spec + too_large),
        (
            "/private-ref.yaml",
            "FETCH_ERROR",
            f"{ref}http://10.0.0.1/common.yaml: URL refused: 10.0.0.1 is a private address",
        ),
        (
            "/metadata-ref.yaml",
            "FETCH_ERROR",
            f"{ref}http://169.254.169.254/latest/meta-data: URL refused: 169.254.169.254 is a "
            "link-local address",
        ),
        (
            "/file-ref.yaml",
            "FETCH_ERROR",
            f"{ref}file:///etc/passwd: URL refused: scheme 'file' is not allowed",
        ),
        (
            "/loop-a.yaml",
            "PARSE_ERROR",
            "$ref 'loop-b.yaml#/B' is circular: it leads back to itself",
        ),
        (
            "/many.yaml",
            "PARSE_ERROR",
            f"The specification refers to more than {processing.MAX_FILES - 1} other files",
        ),
    ]
    for n, (path, code, message) in enumerate(cases):
        got = await failure(
            client, db, org_id, admin, f"url-{n}", {"url": site.base + path}, job_env=job_env
        )
        assert got == (code, [{"message": message}]), path
    # Stopped at the bound, not after fetching everything.
    assert sum(hit.startswith("/part") for hit in site.hits) == processing.MAX_FILES - 1
    # A private address as the source itself.
    got = await failure(
        client,
        db,
        org_id,
        admin,
        "private",
        {"url": "http://192.168.1.1/api.yaml"},
        job_env=job_env,
    )
    assert got == (
        "FETCH_ERROR",
        [{"message": "Fetching the specification: URL refused: 192.168.1.1 is a private address"}],
    )


async def test_slow_source_is_a_fetch_timeout(
    client: httpx.AsyncClient, db: AsyncEngine, site: Site, loopback: Settings, job_env: JobEnv
) -> None:
    impatient = loopback.model_copy(update={"openapi_fetch_timeout": 0.5})
    org_id, admin, _, _ = await setup(db)
    site.files["/slow.yaml"] = _slow(3)
    got = await failure(
        client,
        db,
        org_id,
        admin,
        "slow",
        {"url": f"{site.base}/slow.yaml"},
        job_env=replace(job_env, settings=impatient),
    )
    assert got == (
        "FETCH_TIMEOUT",
        [{"message": "Fetching the specification: URL fetch timed out after 0.5 s"}],
    )


async def test_text_over_the_body_cap_is_refused(
    client: httpx.AsyncClient, db: AsyncEngine, settings: Settings
) -> None:
    org_id, admin, _, _ = await setup(db)
    before = await snapshot(db)
    text = "# padding\n" * (50 * 1024 * 1024 // 10)
    r = await client.post(
        f"/v1/orgs/{org_id}/openapi",
        json={"slug": "huge", "source": {"text": text}},
        headers=admin.headers,
    )
    assert r.status_code == 413
    assert r.json() == error(413, f"Request body exceeds {settings.max_body_bytes} bytes")
    assert await snapshot(db) == before
