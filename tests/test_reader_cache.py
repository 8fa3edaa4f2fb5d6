"""What the reader keeps between requests never outlives a change: a site's sections and groups
are kept under its structure version, pages and page trees under revisions, and everything
else (the site row, its site spaces, their spaces, share links) is read on every request. Two
app instances (two processes of one install) on one database: a change made through one is
obeyed by the other on the very next request, with or without the ETag it had."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
from fastapi import FastAPI
from sqlalchemy.ext.asyncio import AsyncEngine

from docshelf.config import Settings
from docshelf.models import sites
from tests import factories
from tests.helpers import second_app
from tests.reader_site import build
from tests.test_content import insert, new_cr, write
from tests.test_reader import text_of


@pytest.fixture
async def other(settings: Settings, app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    async with second_app(settings) as c:
        yield c


async def _read(other: httpx.AsyncClient, path: str, etag: str | None = None) -> httpx.Response:
    """A page through the other process, twice (the second answer comes from what it kept)."""
    await other.get(path)
    return await other.get(path, headers={"If-None-Match": etag} if etag else {})


async def test_structure_changes_reach_the_other_process(
    client: httpx.AsyncClient, other: httpx.AsyncClient, db: AsyncEngine
) -> None:
    org, (admin,) = await factories.org_with_members(db)
    s = await build(client, org, admin)
    h = admin.headers
    home = await _read(other, s.address)
    assert sorted(text_of(home.text, "tabs").split()) == ["API", "Acme", "Docs", "Reference"]
    etag = home.headers["etag"]
    sections = (await client.get(f"{s.url}/sections", headers=h)).json()["items"]
    api = next(x for x in sections if x["path"] == s.api_path)
    groups = (await client.get(f"{s.url}/section-groups", headers=h)).json()["items"]

    async def changed(path: str = s.address) -> httpx.Response:
        nonlocal etag
        r = await _read(other, path, etag)
        assert r.status_code == 200, r.status_code
        etag = r.headers["etag"]
        return r

    # A section renamed, a group renamed, the site renamed.
    r = await client.patch(f"{s.url}/sections/{api['id']}", json={"title": "Widgets"}, headers=h)
    assert r.status_code == 200, r.text
    assert "Widgets" in text_of((await changed()).text, "tabs")
    r = await client.patch(
        f"{s.url}/section-groups/{groups[0]['id']}", json={"title": "Manuals"}, headers=h
    )
    assert r.status_code == 200, r.text
    assert "Manuals" in text_of((await changed()).text, "tabs")
    r = await client.patch(s.url, json={"title": "Zeta Docs"}, headers=h)
    assert r.status_code == 200, r.text
    assert "<title>Introduction · Zeta Docs</title>" in (await changed()).text
    # A section's condition: visitors without the claim no longer see it.
    r = await client.patch(
        f"{s.url}/sections/{api['id']}",
        json={"condition": "visitor.claims.beta == true"},
        headers=h,
    )
    assert r.status_code == 200, r.text
    assert "Widgets" not in (await changed()).text
    assert (await _read(other, f"{s.address}{s.api_path}/")).status_code == 404
    # A variant removed: its path is gone, the switcher too.
    ss = (await client.get(f"{s.url}/site-spaces", headers=h)).json()["items"]
    v2 = next(x for x in ss if x["path"] == s.v2_path)
    assert (await _read(other, f"{s.address}{s.v2_path}/")).status_code == 200
    r = await client.delete(f"{s.url}/site-spaces/{v2['id']}", headers=h)
    assert r.status_code == 205, r.text
    assert "Guide v2" not in (await changed()).text
    assert (await _read(other, f"{s.address}{s.v2_path}/")).status_code == 404
    # The space renamed, then a new revision of a page.
    r = await client.patch(f"/v1/spaces/{s.main_space}", json={"title": "Handbook"}, headers=h)
    assert r.status_code == 200, r.text
    assert (await changed()).status_code == 200
    r = await client.post(
        f"/v1/spaces/{s.main_space}/content",
        json={
            "changes": [
                {
                    "operation": "update_page",
                    "page": s.guide["Introduction"],
                    "document": {"markdown": "Brand new words."},
                }
            ]
        },
        headers=h,
    )
    assert r.status_code == 200, r.text
    assert "Brand new words." in (await changed()).text
    # A new page merged from a change request.
    cr = await new_cr(client, s.main_space, admin)
    r = await write(client, s.main_space, cr["id"], admin, insert("The end.\n", title="Appendix"))
    assert r.status_code == 200, r.text
    r = await client.post(f"/v1/spaces/{s.main_space}/change-requests/{cr['id']}/merge", headers=h)
    assert r.status_code == 200, r.text
    assert "Appendix" in text_of((await changed()).text, "tree")
    assert (await _read(other, f"{s.address}appendix")).status_code == 200


async def test_access_changes_reach_the_other_process(
    client: httpx.AsyncClient, other: httpx.AsyncClient, db: AsyncEngine
) -> None:
    org, (admin,) = await factories.org_with_members(db)
    s = await build(client, org, admin)
    h = admin.headers
    api_page = f"{s.address}{s.api_path}/"
    assert (await _read(other, api_page)).status_code == 200
    # A space deleted (its own visibility does not matter: the site's decides).
    spaces = (await client.get(f"/v1/orgs/{org}/spaces", headers=h)).json()["items"]
    api_space = next(x for x in spaces if x["title"] == "API")
    r = await client.patch(
        f"/v1/spaces/{api_space['id']}", json={"visibility": "private"}, headers=h
    )
    assert r.status_code == 200, r.text
    assert (await _read(other, api_page)).status_code == 200
    r = await client.delete(f"/v1/spaces/{api_space['id']}", headers=h)
    assert r.status_code in (204, 205), r.text
    assert (await _read(other, api_page)).status_code == 404
    # Share-link visibility: a key opens it; a revoked key stops at once.
    page = f"{s.address}configuration"
    assert (await _read(other, page)).status_code == 200
    r = await client.patch(s.url, json={"visibility": "share-link"}, headers=h)
    assert r.status_code == 200, r.text
    assert (await _read(other, page)).status_code == 404
    link = (await client.post(f"{s.url}/share-links", json={"name": "R"}, headers=h)).json()
    from tests.test_share_links import secret_of

    key = secret_of(link)
    assert (await other.get(f"{page}?shareKey={key}")).status_code == 303
    assert (await _read(other, page)).status_code == 200  # the cookie
    r = await client.patch(f"{s.url}/share-links/{link['id']}", json={"active": False}, headers=h)
    assert r.status_code == 200, r.text
    assert (await _read(other, page)).status_code == 404
    r = await client.patch(s.url, json={"visibility": "public"}, headers=h)
    assert (await _read(other, page)).status_code == 200
    # The organization's hostname moves the address.
    r = await client.patch(f"/v1/orgs/{org}", json={"hostname": "acme"}, headers=h)
    assert r.status_code == 200, r.text
    moved = f"/acme/{s.site['id']}/configuration"
    assert (await _read(other, moved)).status_code == 200
    # Unpublished, deleted.
    r = await client.post(f"{s.url}/unpublish", headers=h)
    assert r.status_code == 200, r.text
    assert (await _read(other, moved)).status_code == 404
    r = await client.post(f"{s.url}/publish", headers=h)
    assert (await _read(other, moved)).status_code == 200
    r = await client.delete(s.url, headers=h)
    assert r.status_code == 205, r.text
    assert (await _read(other, moved)).status_code == 404


async def _version(db: AsyncEngine, site_id: str) -> int:
    async with db.connect() as conn:
        stmt = sa.select(sites.c.structure_version).where(sites.c.id == site_id)
        return int((await conn.execute(stmt)).scalar_one())


async def test_every_structure_write_bumps_the_version(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    """The promise the kept structure rests on: each write to sections, groups or site spaces
    moves `structure_version` (the HTTP tests above show what a reader then sees)."""
    org, (admin,) = await factories.org_with_members(db)
    h = admin.headers
    one = await factories.api_space(client, org, admin, title="One", visibility="public")
    two = await factories.api_space(client, org, admin, title="Two", visibility="public")
    r = await client.post(f"/v1/orgs/{org}/sites", json={"spaces": [one["id"]]}, headers=h)
    site_id = r.json()["id"]
    url = f"/v1/orgs/{org}/sites/{site_id}"
    seen = [await _version(db, site_id)]

    async def step(method: str, path: str, body: Any = None) -> dict[str, Any]:
        r = await client.request(method, f"{url}{path}", json=body, headers=h)
        assert r.is_success, (path, r.text)
        seen.append(await _version(db, site_id))
        assert seen[-1] > seen[-2], (method, path)
        return r.json() if r.content else {}

    first = await step("POST", "/sections", {"spaceId": one["id"], "title": "One"})
    second = await step("POST", "/sections", {"spaceId": two["id"], "title": "Two"})
    await step("PATCH", f"/sections/{second['id']}", {"title": "Deux", "condition": "true"})
    await step(
        "POST",
        f"/sections/{second['id']}/move",
        {"position": {"before": {"type": "site-section", "siteSection": first["id"]}}},
    )
    group = await step("POST", "/section-groups", {"title": "G"})
    await step("POST", f"/section-groups/{group['id']}/sections", {"sectionId": second["id"]})
    await step("PATCH", f"/section-groups/{group['id']}", {"title": "H"})
    await step("DELETE", f"/section-groups/{group['id']}/sections/{second['id']}")
    added = await step("POST", "/site-spaces", {"spaceId": two["id"], "sectionId": first["id"]})
    await step("PATCH", f"/site-spaces/{added['id']}", {"path": "other"})
    await step("PATCH", "", {"defaultSiteSpace": added["id"]})
    await step("DELETE", f"/site-spaces/{added['id']}")
    await step("PATCH", "", {"defaultSiteSection": second["id"]})
    await step("DELETE", f"/section-groups/{group['id']}")
    await step("DELETE", f"/sections/{first['id']}")
