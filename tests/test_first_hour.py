"""A user's first hour, from issue 27: a body sent without a JSON Content-Type is told so;
`/` and every `urls.app` address say what Docshelf serves instead of a bare 404."""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from docshelf import __version__
from tests import factories
from tests.conftest import BASE
from tests.helpers import error

_FIX = "send the JSON body with the header 'Content-Type: application/json'"


@pytest.mark.parametrize(
    ("content_type", "message"),
    [
        (None, f"Missing Content-Type header: {_FIX}"),
        ("text/plain", f"Content-Type 'text/plain' is not accepted for this body: {_FIX}"),
        (
            "application/x-www-form-urlencoded",  # what `curl -d` sends
            "Content-Type 'application/x-www-form-urlencoded' is not accepted for this body: "
            + _FIX,
        ),
    ],
)
async def test_a_json_body_without_json_content_type_is_told_so(
    client: httpx.AsyncClient, db: AsyncEngine, content_type: str | None, message: str
) -> None:
    org_id, (admin,) = await factories.org_with_members(db)
    headers = dict(admin.headers)
    if content_type is not None:
        headers["Content-Type"] = content_type
    r = await client.post(f"/v1/orgs/{org_id}/spaces", content=b'{"title": "x"}', headers=headers)
    assert (r.status_code, r.json()) == (400, error(400, message))
    space = await factories.api_space(client, org_id, admin, title="Kept")
    # A staged write (content batches) reads its body the same way.
    r = await client.post(
        f"/v1/spaces/{space['id']}/content", content=b'{"changes": []}', headers=headers
    )
    assert (r.status_code, r.json()) == (400, error(400, message))
    listed = await client.get(f"/v1/orgs/{org_id}/spaces", headers=admin.headers)
    assert [s["title"] for s in listed.json()["items"]] == ["Kept"]
    # The same body as JSON is accepted.
    r = await client.post(f"/v1/orgs/{org_id}/spaces", json={"title": "x"}, headers=admin.headers)
    assert r.status_code == 201


def _links() -> dict[str, str]:
    return {
        "api": f"{BASE}/v1/",
        "explorer": f"{BASE}/docs",
        "openapi": f"{BASE}/openapi.json",
        "readiness": f"{BASE}/readyz",
    }


async def test_the_root_names_the_api_the_explorer_and_the_reader(
    client: httpx.AsyncClient,
) -> None:
    r = await client.get("/")
    assert (r.status_code, r.json()) == (
        200,
        {
            "name": "Docshelf",
            "version": __version__,
            "message": "Docshelf serves GitBook's API v1 under /v1 (a bearer API token on each "
            "request) and each published site at its `urls.published` address.",
            "urls": _links(),
        },
    )
    r = await client.get("/", headers={"Accept": "text/html,application/xhtml+xml"})
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    assert "<h1>Docshelf</h1>" in r.text
    hrefs = re.findall(r'href="([^"]+)"', r.text)
    assert hrefs == list(_links().values())
    # The API answers without a token by saying it needs one; the rest answer as they are.
    assert (await client.get(hrefs[0][len(BASE) :])).status_code == 401
    for href in hrefs[1:]:
        assert (await client.get(href[len(BASE) :])).status_code == 200, href


async def test_every_app_url_leads_to_a_page_naming_the_api_location(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    org_id, (admin,) = await factories.org_with_members(db)
    h = admin.headers
    space = await factories.api_space(client, org_id, admin, title="Guide")
    collection = await factories.api_collection(client, org_id, admin, title="Team")
    site = (await client.post(f"/v1/orgs/{org_id}/sites", json={"title": "Docs"}, headers=h)).json()
    org = (await client.get(f"/v1/orgs/{org_id}", headers=h)).json()
    sid = space["id"]
    r = await client.patch(f"/v1/spaces/{sid}", json={"editMode": "live"}, headers=h)
    change = {"operation": "insert_page", "title": "Hello", "document": {"markdown": "Hi."}}
    r = await client.post(f"/v1/spaces/{sid}/content", json={"changes": [change]}, headers=h)
    assert r.status_code == 200, r.text
    page = (await client.get(f"/v1/spaces/{sid}/content/pages", headers=h)).json()["pages"][0]
    revision = (await client.get(f"/v1/spaces/{sid}/content", headers=h)).json()
    r = await client.post(f"/v1/spaces/{sid}/change-requests", json={}, headers=h)
    assert r.status_code == 201, r.text
    cr = r.json()
    resources = [org, space, collection, site, page, revision, cr]
    for resource in resources:
        app = resource["urls"]["app"]
        assert app.startswith(BASE), app
        r = await client.get(app[len(BASE) :])
        expected = resource["urls"].get("location")
        if resource is page:
            expected = f"{BASE}/v1/spaces/{sid}/content/page/{page['id']}"
        elif resource is revision:
            expected = f"{BASE}/v1/spaces/{sid}/revisions/{revision['id']}"
        elif resource is cr:
            expected = f"{BASE}/v1/spaces/{sid}/change-requests"
        assert (r.status_code, r.json()) == (
            200,
            {
                "message": "Docshelf has no editor app: this is the address GitBook's "
                "`urls.app` names. The resource is served by the API, at `urls.location`, "
                "with an API token.",
                "urls": {"location": expected, **_links()},
            },
        ), app
        # ...which answers the resource with a token.
        assert (await client.get(expected[len(BASE) :], headers=h)).status_code == 200, expected
    r = await client.get(org["urls"]["app"][len(BASE) :], headers={"Accept": "text/html"})
    assert r.headers["content-type"].startswith("text/html")
    assert f'<a href="{org["urls"]["location"]}">' in r.text
    # Other paths there are still not found.
    r = await client.get("/s/")
    assert (r.status_code, r.json()) == (404, error(404, "Not found"))


async def test_a_leading_heading_is_the_page_title_not_a_second_one(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    import io

    import pypdf

    org_id, (admin,) = await factories.org_with_members(db)
    h = admin.headers
    space = await factories.api_space(
        client, org_id, admin, title="Handbook", visibility="public", editMode="live"
    )
    sid = space["id"]

    def insert(title: str | None, markdown: str) -> dict[str, Any]:
        change: dict[str, Any] = {"operation": "insert_page", "document": {"markdown": markdown}}
        if title is not None:
            change["title"] = title
        return change

    r = await client.post(
        f"/v1/spaces/{sid}/content",
        json={
            "changes": [
                insert("Install", "# Install\n\nRun the installer.\n"),
                insert(None, "\n# Getting *started*\n\nHello.\n"),
                insert("Other", "# Different\n\nKept as content.\n"),
            ]
        },
        headers=h,
    )
    assert r.status_code == 200, r.text
    install, started, other = (c["page"]["id"] for c in r.json()["changes"])

    async def page(page_id: str) -> tuple[str, str, str]:
        r = await client.get(
            f"/v1/spaces/{sid}/content/page/{page_id}", params={"format": "markdown"}, headers=h
        )
        body = r.json()
        return body["title"], body["slug"], body["markdown"]

    assert await page(install) == ("Install", "install", "Run the installer.\n")
    assert await page(started) == ("Getting started", "getting-started", "Hello.\n")
    assert await page(other) == ("Other", "other", "# Different\n\nKept as content.\n")

    # An update's leading heading is the title too; the slug stays.
    change = {
        "operation": "update_page",
        "page": install,
        "document": {"markdown": "# Installing\n\nRun the installer twice.\n"},
    }
    r = await client.post(f"/v1/spaces/{sid}/content", json={"changes": [change]}, headers=h)
    assert r.status_code == 200, r.text
    assert await page(install) == ("Installing", "install", "Run the installer twice.\n")

    # A body that holds its own heading, read back and written again (edited or not), keeps
    # its title: only a `title` renames it.
    for markdown in ("# Different\n\nKept as content.\n", "# Different\n\nEdited.\n"):
        change = {"operation": "update_page", "page": other, "document": {"markdown": markdown}}
        r = await client.post(f"/v1/spaces/{sid}/content", json={"changes": [change]}, headers=h)
        assert r.status_code == 200, r.text
        assert await page(other) == ("Other", "other", markdown)

    # The reader shows the title once.
    r = await client.post(
        f"/v1/orgs/{org_id}/sites", json={"title": "Docs", "spaces": [sid]}, headers=h
    )
    site = r.json()
    r = await client.post(f"/v1/orgs/{org_id}/sites/{site['id']}/publish", headers=h)
    address = r.json()["urls"]["published"][len(BASE) :]
    html = (await client.get(address)).text
    assert "Run the installer twice." in html
    assert re.findall(r"<h1[^>]*>([^<]*)</h1>", html) == ["Installing"]

    # ...and so does the PDF, on the page's own sheet.
    r = await client.get(f"/v1/spaces/{sid}/pdf", params={"page": install, "only": True}, headers=h)
    assert r.status_code == 200, r.text
    pdf = (await client.get(r.json()["url"][len(BASE) :])).content
    sheets = [p.extract_text() for p in pypdf.PdfReader(io.BytesIO(pdf)).pages]
    # (the sheet ends with its page number)
    assert " ".join(sheets[-1].split()) == "Installing Run the installer twice. 3 / 3"
