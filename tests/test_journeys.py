"""User journeys against the product as it ships: `docshelf serve` started the way `make run`
starts it (a real subprocess, a data directory, default settings, the job runner as its child,
its own first-start bootstrap), driven over HTTP, with `curl` and `jq` running the README's
first-site block, with GitBook's official API client, and in Chromium. On SQLite the server
keeps its database in its data directory; on PostgreSQL it gets a database of its own.

The one setting given beyond `make run`'s is DOCSHELF_FETCH_ALLOWED_HOSTS=127.0.0.1: the URLs
these journeys import from are served on loopback, which the server otherwise refuses to fetch.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import threading
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cache
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
import sqlalchemy as sa
from PIL import Image
from sqlalchemy.ext.asyncio import create_async_engine

from tests.browser import chromium
from tests.helpers import DOCSHELF, eventually
from tests.loopback import pages_zip, serving
from tests.saml_idp import IdentityProvider, key_pair

ROOT = Path(__file__).resolve().parent.parent
CLIENT_VERSION = "0.202.0"
CLIENT_CACHE = (
    Path(os.environ.get("DOCSHELF_CACHE_DIR", ROOT / ".cache")) / "gitbook-client" / CLIENT_VERSION
)


def _run(command: list[str], **options: Any) -> subprocess.CompletedProcess[str]:
    """A command as a user types it (the journeys wait for each, as the user would)."""
    return subprocess.run(command, capture_output=True, text=True, timeout=300, **options)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _postgres(url: str, name: str, *, create: bool) -> str:
    """A new, empty database beside the suite's (a server that bootstraps its own), or none."""
    source = sa.make_url(url)

    async def run() -> None:
        admin = create_async_engine(source.set(database="postgres"), isolation_level="AUTOCOMMIT")
        async with admin.connect() as conn:
            await conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
            if create:
                await conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
        await admin.dispose()

    # In a thread of its own: the callers may be inside the test's event loop.
    with ThreadPoolExecutor(1) as pool:
        pool.submit(asyncio.run, run()).result()
    return source.set(database=name).render_as_string(hide_password=False)


@dataclass
class Product:
    """A `docshelf serve` as `make run` runs it, from `root` (which holds `data/`)."""

    root: Path
    base: str
    env: dict[str, str]
    process: subprocess.Popen[bytes]
    log: Path

    @property
    def data(self) -> Path:
        return self.root / "data"

    @property
    def token(self) -> str:
        return (self.data / "admin-token").read_text().strip()

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    def client(self, token: str | None = None) -> httpx.AsyncClient:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.AsyncClient(base_url=self.base, headers=headers, timeout=60)

    def cli(self, *args: str) -> str:
        """A `docshelf` command on the product's data, as its operator runs one."""
        done = _run(
            [DOCSHELF, "--data-dir", str(self.data), *args],
            env=self.env,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()


def start_product(root: Path, database_url: str | None, **settings: str) -> Product:
    """`settings`: DOCSHELF_* variables beyond make run's (a journey's own setup)."""
    root.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCSHELF_")}
    env["DOCSHELF_FETCH_ALLOWED_HOSTS"] = "127.0.0.1"
    env.update(settings)
    if database_url:
        env["DOCSHELF_DATABASE_URL"] = database_url
    port = _free_port()
    log = root / "serve.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [DOCSHELF, "serve", "--data-dir", "./data", "--port", str(port)],
            cwd=root,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    product = Product(root, f"http://127.0.0.1:{port}", env, process, log)
    deadline = time.monotonic() + 120
    while True:
        try:
            if httpx.get(f"{product.base}/readyz", timeout=2).status_code == 200:
                return product
        except httpx.TransportError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            product.stop()
            pytest.fail("docshelf serve did not become ready:\n" + log.read_text(errors="replace"))
        time.sleep(0.2)


@pytest.fixture(scope="module")
def product(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Product]:
    url = os.environ.get("DOCSHELF_TEST_DATABASE_URL")
    name = f"journey_{uuid.uuid4().hex[:8]}"
    started = start_product(
        tmp_path_factory.mktemp("journeys"), _postgres(url, name, create=True) if url else None
    )
    try:
        yield started
    finally:
        started.stop()
        if url:
            _postgres(url, name, create=False)


def _png(path: Path, color: str = "red") -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (24, 16), color).save(out, "PNG")
    path.write_bytes(out.getvalue())
    return out.getvalue()


def _readme_block(marker: str) -> str:
    text = (ROOT / "README.md").read_text()
    found = re.search(rf"<!-- {marker} -->\n```sh\n(.*?)```\n<!-- /{marker} -->", text, re.S)
    assert found is not None, f"README.md has no {marker} block"
    return found.group(1)


async def _org(product: Product) -> str:
    async with product.client(product.token) as c:
        return str((await c.get("/v1/orgs")).json()["items"][0]["id"])


async def _space_with_page(
    product: Product, title: str, markdown: str, **space: Any
) -> dict[str, Any]:
    org = await _org(product)
    async with product.client(product.token) as c:
        r = await c.post(
            f"/v1/orgs/{org}/spaces", json={"title": title, "editMode": "live", **space}
        )
        assert r.status_code == 201, r.text
        created: dict[str, Any] = r.json()
        change = {"operation": "insert_page", "title": title, "document": {"markdown": markdown}}
        r = await c.post(f"/v1/spaces/{created['id']}/content", json={"changes": [change]})
        assert r.status_code == 200, r.text
    return created


def _user_token(product: Product, email: str) -> str:
    product.cli("user", "create", "--email", email)
    return product.cli("token", "create", "--user", email).strip().splitlines()[-1]


async def _open_in_chromium(url: str, check: Callable[[Any], Awaitable[None]]) -> None:
    async with chromium() as browser:
        page = await browser.new_page()
        response = await page.goto(url)
        assert response is not None and response.status == 200, url
        await check(page)


# -- the journeys ------------------------------------------------------------------------------


async def test_the_readmes_first_published_site(product: Product) -> None:
    """README's "first published site in five minutes", run as written with curl and jq, then
    read by an anonymous browser: the page and its image."""
    for tool in ("bash", "curl", "jq", "base64"):
        assert shutil.which(tool), f"{tool} is needed (Debian packages curl, jq)"
    _png(product.root / "logo.png")
    done = _run(
        ["bash", "-euo", "pipefail", "-c", _readme_block("first-site")],
        cwd=product.root,
        env={**os.environ, "DOCSHELF": product.base},
    )
    assert done.returncode == 0, done.stderr
    address = done.stdout.strip().splitlines()[-1]
    org = await _org(product)
    assert address.startswith(f"{product.base}/{org}/"), address
    async with product.client() as anonymous:
        r = await anonymous.get("/v1/urls/published", params={"url": address})
        assert r.status_code == 200, r.text
        assert r.json()["pathname"] == ""

    async def check(page: Any) -> None:
        assert "Hello, readers." in await page.inner_text("main")
        image = page.locator('img[alt="Our logo"]')
        await image.wait_for()
        width = await image.evaluate("img => img.complete && img.naturalWidth")
        assert width == 24, width

    await _open_in_chromium(address, check)


@cache
def _gitbook_client() -> Path:
    """`@gitbook/api` from the npm registry, installed once into the cache."""
    target = CLIENT_CACHE / "node_modules" / "@gitbook" / "api"
    if not target.exists():
        npm = shutil.which("npm")
        assert npm is not None, "npm is needed (Debian package npm)"
        CLIENT_CACHE.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [npm, "install", "--silent", "--no-audit", "--no-fund", "--prefix", str(CLIENT_CACHE),
             f"@gitbook/api@{CLIENT_VERSION}"],
            check=True,
            capture_output=True,
            timeout=300,
        )  # fmt: skip
    return CLIENT_CACHE


async def test_gitbooks_client_on_a_new_organization(product: Product) -> None:
    """GitBook's own client: a space made with its defaults, a member who joins by link and
    sees and edits it, a public site publishing it that anyone resolves."""
    node = shutil.which("node")
    assert node is not None, "node is needed (Debian package nodejs, with npm)"
    member = _user_token(product, "member@example.com")
    done = _run(
        [node, str(ROOT / "tests" / "journeys" / "gitbook_client.mjs")],
        env={
            **os.environ,
            "DOCSHELF": product.base,
            "ADMIN_TOKEN": product.token,
            "MEMBER_TOKEN": member,
            "CLIENT": str(_gitbook_client()),
        },
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    space = seen["space"]
    assert (space["visibility"], space["defaultLevel"]) == ("private", "inherit")
    assert space["id"] in seen["memberSpaces"]
    assert seen["memberCanEdit"] is True
    assert seen["found"]["space"] == seen["resolved"]["space"] == space["id"]


async def test_a_member_joins_by_link_and_works(product: Product) -> None:
    org = await _org(product)
    space = await _space_with_page(product, "Runbook", "On call, rotate weekly.\n")
    async with product.client(product.token) as admin:
        r = await admin.post(f"/v1/orgs/{org}/link-invites", json={"role": "edit"})
        assert r.status_code == 201, r.text
        invite = r.json()["id"]
    async with product.client(_user_token(product, "writer@example.com")) as writer:
        r = await writer.post(f"/v1/orgs/{org}/invites/{invite}")
        assert r.status_code == 200, r.text
        r = await writer.get(f"/v1/orgs/{org}/spaces")
        assert space["id"] in [s["id"] for s in r.json()["items"]]
        r = await writer.post(
            f"/v1/spaces/{space['id']}/change-requests", json={"subject": "Rotation"}
        )
        assert r.status_code == 201, r.text
        cr = r.json()["id"]
        change = {
            "operation": "insert_page",
            "title": "Rotation",
            "document": {"markdown": "Weekly.\n"},
        }
        r = await writer.post(
            f"/v1/spaces/{space['id']}/change-requests/{cr}/content", json={"changes": [change]}
        )
        assert r.status_code == 200, r.text
    async with product.client(product.token) as admin:
        r = await admin.post(f"/v1/spaces/{space['id']}/change-requests/{cr}/merge")
        assert r.status_code == 200, r.text
        r = await admin.get(f"/v1/spaces/{space['id']}/content")
        assert "Rotation" in [p["title"] for p in r.json()["pages"]]


async def test_an_import_past_the_inline_limit(product: Product) -> None:
    """260 pages: a job imports them, the answer says it is queued, the run says when done."""
    count = 260
    archive = pages_zip(count)
    space = await _space_with_page(product, "Imported", "Before the import.\n")
    with serving({"/docs.zip": (archive, "application/zip")}) as base:
        async with product.client(product.token) as c:
            r = await c.post(
                f"/v1/spaces/{space['id']}/content/import",
                json={"url": f"{base}/docs.zip", "source": "zip"},
            )
            assert r.status_code == 202, r.text
            run = r.json()
            assert (run["object"], run["status"]) == ("import-run", "pending")
            assert "importedResources" not in run

            async def finished() -> dict[str, Any] | None:
                body: dict[str, Any] = (await c.get(r.headers["location"])).json()
                return body if body["status"] in ("completed", "failed") else None

            done = await eventually("the import", finished)
            assert done["status"] == "completed", done
            assert done["importedResources"] == count
            r = await c.get(f"/v1/spaces/{space['id']}/content")
            assert len(r.json()["pages"]) == count + 1


async def test_openapi_specs_from_text_and_from_a_url(product: Product) -> None:
    org = await _org(product)
    text = "openapi: 3.0.3\ninfo:\n  title: Pets\n  version: '1'\npaths: {}\n"
    with serving({"/pets.yaml": (text.encode(), "application/yaml")}) as base:
        async with product.client(product.token) as c:
            for slug, source in (
                ("pets-text", {"text": text}),
                ("pets-url", {"url": f"{base}/pets.yaml"}),
            ):
                r = await c.post(f"/v1/orgs/{org}/openapi", json={"slug": slug, "source": source})
                assert r.status_code == 201, r.text

                async def processed(slug: str = slug) -> dict[str, Any] | None:
                    body: dict[str, Any] = (await c.get(f"/v1/orgs/{org}/openapi/{slug}")).json()
                    done = body["processingState"] not in ("pending", "progress")
                    return body if done else None

                spec = await eventually(f"the spec {slug}", processed)
                assert spec["processingState"] == "complete", spec


async def test_a_pdf_export(product: Product) -> None:
    space = await _space_with_page(product, "Printed", "A page worth printing.\n")
    async with product.client(product.token) as c:
        r = await c.get(f"/v1/spaces/{space['id']}/pdf")
        assert r.status_code == 200, r.text
        pdf = await c.get(r.json()["url"])
        assert pdf.status_code == 200 and pdf.content.startswith(b"%PDF-")
    from pypdf import PdfReader

    text = " ".join(page.extract_text() for page in PdfReader(io.BytesIO(pdf.content)).pages)
    assert "A page worth printing." in text


async def test_backup_then_restore_into_a_new_install(product: Product, tmp_path: Path) -> None:
    space = await _space_with_page(product, "Kept", "Survives a restore.\n")
    backup = tmp_path / "backup"
    product.cli("backup", str(backup))
    url = os.environ.get("DOCSHELF_TEST_DATABASE_URL")
    name = f"restored_{uuid.uuid4().hex[:8]}"
    target = _postgres(url, name, create=True) if url else None
    root = tmp_path / "restored"
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCSHELF_")}
    if target:
        env["DOCSHELF_DATABASE_URL"] = target
    done = _run(
        [DOCSHELF, "--data-dir", str(root / "data"), "restore", str(backup)],
        env=env,
    )
    assert done.returncode == 0, done.stderr
    restored = start_product(root, target)
    try:
        async with restored.client(product.token) as c:
            r = await c.get(f"/v1/spaces/{space['id']}/content")
            assert r.status_code == 200, r.text
            (page,) = [p for p in r.json()["pages"] if p["title"] == "Kept"]
            r = await c.get(f"/v1/spaces/{space['id']}/content/page/{page['id']}?format=markdown")
            assert "Survives a restore." in r.json()["markdown"]
    finally:
        restored.stop()
        if url:
            _postgres(url, name, create=False)


@pytest.fixture
async def identity_provider(product: Product) -> AsyncIterator[tuple[IdentityProvider, str]]:
    """An identity provider on loopback: its SSO URL answers an AuthnRequest with a signed
    response for reader@example.com, posted back to the ACS by the browser (HTTP-POST)."""
    keys = key_pair()
    holder: dict[str, IdentityProvider] = {}

    class IdP(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            idp = holder["idp"]
            request = idp.read_request(f"{address}{self.path}")
            response = idp.respond(str(request.message.id), "reader@example.com")
            relay = parse_qs(urlsplit(self.path).query).get("RelayState", [""])[0]
            body = (
                '<!doctype html><html><body onload="document.forms[0].submit()">'
                f'<form method="post" action="{idp.sp["acsURL"]}">'
                f'<input type="hidden" name="SAMLResponse" value="{response}">'
                f'<input type="hidden" name="RelayState" value="{relay}">'
                "</form></body></html>"
            ).encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), IdP)
    server.daemon_threads = True
    address = f"http://127.0.0.1:{server.server_address[1]}"
    threading.Thread(target=server.serve_forever, daemon=True).start()
    org = await _org(product)
    async with product.client(product.token) as c:
        r = await c.post(
            f"/v1/orgs/{org}/saml",
            json={
                "label": "Corp IdP",
                "entityID": f"{address}/metadata",
                "ssoURL": f"{address}/sso",
                "certificate": keys.cert_pem,
                "defaultRole": "read",
            },
        )
        assert r.status_code == 201, r.text
        provider = r.json()
    holder["idp"] = IdentityProvider(
        f"{address}/metadata", f"{address}/sso", keys, provider["service"]
    )
    try:
        yield holder["idp"], provider["service"]["startURL"]
    finally:
        server.shutdown()
        server.server_close()


async def test_an_sso_login_in_a_browser(
    product: Product, identity_provider: tuple[IdentityProvider, str]
) -> None:
    """A member signs in through the organization's identity provider in Chromium, lands on the
    page they asked for in a site only members and link holders read, and gets a token."""
    _, start = identity_provider
    org = await _org(product)
    space = await _space_with_page(product, "Members only", "For the team's eyes.\n")
    async with product.client(product.token) as c:
        r = await c.post(
            f"/v1/orgs/{org}/sites",
            json={"title": "Team", "visibility": "share-link", "spaces": [space["id"]]},
        )
        assert r.status_code == 201, r.text
        site = r.json()
        r = await c.post(f"/v1/orgs/{org}/sites/{site['id']}/publish")
        assert r.status_code == 200, r.text
        address = r.json()["urls"]["published"]
    async with product.client() as anonymous:
        assert (await anonymous.get(address)).status_code == 404
    landing = urlsplit(address).path
    async with chromium() as browser:
        page = await browser.new_page()
        # A login link followed from elsewhere: a page names where it leads first.
        await page.goto(f"{start}?next={landing}")
        assert "You are about to leave for" in await page.inner_text("body")
        async with page.expect_navigation(url=re.compile(re.escape(address))):
            await page.click("button[type=submit]")
        assert "For the team's eyes." in await page.inner_text("main")
        token = await page.evaluate(
            "fetch('/sso/token', {method: 'POST'}).then(r => r.json()).then(b => b.token)"
        )
    async with product.client(token) as member:
        r = await member.get("/v1/user")
        assert r.status_code == 200 and r.json()["email"] == "reader@example.com"
        r = await member.get(f"/v1/spaces/{space['id']}")
        assert r.status_code == 200 and r.json()["permissions"]["edit"] is False
