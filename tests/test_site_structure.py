"""Sections, section groups and site spaces over HTTP: whole bodies, the structure's
invariants (one default per site / section / root, paths unique and URL-safe among siblings,
moves by position, a section's first site space, defaults handed on), `Prefer:
return=minimal`, spaces leaving the organization, concurrent writers, refusals changing
nothing."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from docshelf.models import site_sections, site_spaces
from docshelf.models import spaces as spaces_table
from tests import factories
from tests.conftest import BASE
from tests.factories import Who
from tests.helpers import error, listing, snapshot


class Site:
    """One site as its admin sees it, with the calls the tests make."""

    def __init__(self, client: httpx.AsyncClient, org: str, who: Who, body: dict[str, Any]):
        self.client, self.org, self.who, self.id = client, org, who, body["id"]
        self.url = f"/v1/orgs/{org}/sites/{self.id}"

    async def call(
        self, method: str, path: str = "", json: Any = None, *, minimal: bool = False
    ) -> Any:
        headers = dict(self.who.headers)
        if minimal:
            headers["Prefer"] = "return=minimal"
        return await self.client.request(method, f"{self.url}{path}", json=json, headers=headers)

    async def ok(self, method: str, path: str = "", json: Any = None, status: int = 200) -> Any:
        r = await self.call(method, path, json)
        assert r.status_code == status, (method, path, r.text)
        return r.json() if r.content else None

    async def space(self, space_id: str) -> dict[str, Any]:
        r = await self.client.get(f"/v1/spaces/{space_id}", headers=self.who.headers)
        body: dict[str, Any] = r.json()
        return body

    async def structure(self) -> dict[str, Any]:
        body: dict[str, Any] = await self.ok("GET", "/structure")
        return body

    def location(self, kind: str, item_id: str) -> str:
        return f"{BASE}/v1/orgs/{self.org}/sites/{self.id}/{kind}/{item_id}"

    async def site_space_body(
        self,
        ss_id: str,
        space_id: str,
        *,
        path: str,
        default: bool,
        section: str | None = None,
        **extra: Any,
    ) -> dict[str, Any]:
        space = await self.space(space_id)
        body: dict[str, Any] = {
            "object": "site-space",
            "id": ss_id,
            "path": path,
            "title": space["title"],
            "space": space,
            "default": default,
            "draft": False,
            "hasAdvancedCustomizationFeature": False,
            "urls": {"location": self.location("site-spaces", ss_id)},
        }
        if section is not None:
            body["section"] = section
        body.update(extra)
        return body

    def section_body(
        self,
        section_id: str,
        *,
        title: str,
        path: str,
        default: bool,
        site_spaces: list[dict[str, Any]],
        **extra: Any,
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "object": "site-section",
            "id": section_id,
            "title": title,
            "path": path,
            "default": default,
            "draft": False,
            "siteSpaces": site_spaces,
            "urls": {"location": self.location("sections", section_id)},
        }
        body.update(extra)
        return body


async def new_site(
    client: httpx.AsyncClient, org: str, who: Who, spaces: list[str], title: str = "Docs"
) -> Site:
    r = await client.post(
        f"/v1/orgs/{org}/sites", json={"title": title, "spaces": spaces}, headers=who.headers
    )
    assert r.status_code == 201, r.text
    return Site(client, org, who, r.json())


async def spaces(client: httpx.AsyncClient, org: str, who: Who, *titles: str) -> list[str]:
    return [(await factories.api_space(client, org, who, title=t))["id"] for t in titles]


async def test_site_spaces_at_the_root(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    org, (admin,) = await factories.org_with_members(db)
    one, two, three = await spaces(client, org, admin, "One", "Two", "Two")
    site = await new_site(client, org, admin, [one])
    r = await site.call("POST", "/site-spaces", {"spaceId": two})
    assert r.status_code == 201, r.text
    ss2 = r.json()
    assert r.headers["location"] == ss2["urls"]["location"]
    ss3 = await site.ok("POST", "/site-spaces", {"spaceId": three}, status=201)
    structure = await site.structure()
    ss1 = structure["structure"][0]
    expected = [
        await site.site_space_body(ss1["id"], one, path="one", default=True),
        await site.site_space_body(ss2["id"], two, path="two", default=False),
        # Same title, so the path takes a suffix: paths are unique among siblings.
        await site.site_space_body(ss3["id"], three, path="two-2", default=False),
    ]
    assert structure == {"type": "siteSpaces", "structure": expected}
    assert await site.ok("GET", "/site-spaces") == listing(*expected)
    assert await site.ok("GET", "/site-spaces?default=true") == listing(expected[0])
    assert await site.ok("GET", "/site-spaces?default=false") == listing(*expected[1:])
    page = await site.ok("GET", "/site-spaces?limit=2")
    assert page["items"] == expected[:2] and page["count"] == 3
    rest = await site.ok("GET", f"/site-spaces?limit=2&page={page['next']['page']}")
    assert rest == {"items": expected[2:], "count": 3}
    body = await site.ok("GET")
    assert body["siteSpaces"] == 3 and body["defaultSpace"] == one
    assert {"id": "sites-multivariant-site", "plan": "basic", "frozen": False} in body["features"]
    # Prefer: return=minimal on adding a site space: 204, and the site space is there.
    (four,) = await spaces(site.client, site.org, admin, "Four")
    r = await site.call("POST", "/site-spaces", {"spaceId": four}, minimal=True)
    assert (r.status_code, r.content, r.headers["preference-applied"]) == (
        204,
        b"",
        "return=minimal",
    )
    (added,) = (await site.ok("GET", "/site-spaces?default=false"))["items"][2:]
    assert added == await site.site_space_body(added["id"], four, path="four", default=False)
    assert (await site.call("DELETE", f"/site-spaces/{added['id']}")).status_code == 205
    # The same space twice beside itself: refused, nothing written.
    before = await snapshot(db)
    r = await site.call("POST", "/site-spaces", {"spaceId": two})
    assert r.json() == error(409, "This space is already shown there on the site")
    assert await snapshot(db) == before

    # Moves: before, after, and to the end when no position is given.
    moved = await site.ok(
        "POST",
        f"/site-spaces/{ss3['id']}/move",
        {"position": {"before": {"type": "site-space", "siteSpace": ss1["id"]}}},
    )
    assert moved == expected[2]
    order = [s["id"] for s in (await site.structure())["structure"]]
    assert order == [ss3["id"], ss1["id"], ss2["id"]]
    await site.ok(
        "POST",
        f"/site-spaces/{ss3['id']}/move",
        {"position": {"after": {"type": "site-space", "siteSpace": ss1["id"]}}},
    )
    await site.ok("POST", f"/site-spaces/{ss1['id']}/move")
    order = [s["id"] for s in (await site.structure())["structure"]]
    assert order == [ss3["id"], ss2["id"], ss1["id"]]

    # PATCH: path, condition set / kept / removed; Prefer: return=minimal.
    url = f"/site-spaces/{ss2['id']}"
    patched = await site.ok("PATCH", url, {"path": "v2", "condition": "visitor.claims.beta"})
    assert patched == {**expected[1], "path": "v2", "condition": "visitor.claims.beta"}
    assert await site.ok("PATCH", url, {}) == patched
    r = await site.call("PATCH", url, {"condition": None}, minimal=True)
    assert (r.status_code, r.content, r.headers["preference-applied"]) == (
        204,
        b"",
        "return=minimal",
    )
    assert await site.ok("PATCH", url, {}) == {**expected[1], "path": "v2"}
    before = await snapshot(db)
    for body, status, message in (
        ({"path": "two-2"}, 409, "Another site space beside this one has the path 'two-2'"),
        ({"path": "Not Safe"}, 400, None),
        ({"path": "a/b"}, 400, None),
        ({"path": None}, 400, "Invalid body field 'path': must not be null"),
        ({"condition": ""}, 400, None),
        ({"condition": "x" * 1025}, 400, None),
    ):
        r = await site.call("PATCH", url, body)
        assert r.status_code == status, (body, r.text)
        if message:
            assert r.json() == error(status, message)
    assert await snapshot(db) == before

    # Deleting the default hands it to the first remaining sibling.
    r = await site.call("DELETE", f"/site-spaces/{ss1['id']}")
    assert (r.status_code, r.content) == (205, b"")
    structure = await site.structure()
    assert [(s["id"], s["default"]) for s in structure["structure"]] == [
        (ss3["id"], True),
        (ss2["id"], False),
    ]
    # The site's default site space, set from the site.
    body = await site.ok("PATCH", "", {"defaultSiteSpace": ss2["id"]})
    assert body["defaultSpace"] == two and body["siteSpaces"] == 2
    assert await site.ok("GET", "/site-spaces?default=true") == listing(
        {**expected[1], "path": "v2", "default": True}
    )


async def test_sections(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    org, (admin,) = await factories.org_with_members(db)
    one, two, three = await spaces(client, org, admin, "One", "Two", "Three")
    site = await new_site(client, org, admin, [one], title="Docs")
    root = (await site.structure())["structure"][0]
    r = await site.call("POST", "/sections", {"spaceId": two, "title": "API"})
    assert r.status_code == 201, r.text
    api = r.json()
    assert r.headers["location"] == api["urls"]["location"]
    # The first section took in the root's site spaces, as the default section.
    structure = await site.structure()
    assert structure["type"] == "sections"
    first = structure["structure"][0]
    ss_two = api["siteSpaces"][0]["id"]
    assert api == site.section_body(
        api["id"],
        title="API",
        path="api",
        default=False,
        site_spaces=[
            await site.site_space_body(ss_two, two, path="two", default=True, section=api["id"])
        ],
    )
    assert first == site.section_body(
        first["id"],
        title="Docs",
        path="docs",
        default=True,
        site_spaces=[
            await site.site_space_body(
                root["id"], one, path="one", default=True, section=first["id"]
            )
        ],
    )
    assert structure == {"type": "sections", "structure": [first, api]}
    assert await site.ok("GET", "/sections") == listing(first, api)
    # A section titled like another gets a path of its own; the title defaults to the space's.
    third = await site.ok("POST", "/sections", {"spaceId": three, "title": "api"}, status=201)
    assert third["path"] == "api-2"
    fourth = await site.ok("POST", "/sections", {"spaceId": three}, status=201)
    assert (fourth["title"], fourth["path"]) == ("Three", "three")
    body = await site.ok("GET")
    assert body["siteSpaces"] == 4
    assert {"id": "sites-sections", "plan": "basic", "frozen": False} in body["features"]

    # PATCH a section: every field, Prefer: return=minimal, condition kept when omitted.
    url = f"/sections/{api['id']}"
    patched = await site.ok(
        "PATCH",
        url,
        {
            "title": "Reference",
            "path": "ref",
            "condition": "visitor.claims.pro",
            "icon": "book",
            "description": "All calls",
        },
    )
    api_now = {
        **api,
        "title": "Reference",
        "path": "ref",
        "condition": "visitor.claims.pro",
        "icon": "book",
        "description": "All calls",
    }
    assert patched == api_now
    r = await site.call(
        "PATCH",
        url,
        {"icon": None, "description": None},
        minimal=True,
    )
    assert (r.status_code, r.content, r.headers["preference-applied"]) == (
        204,
        b"",
        "return=minimal",
    )
    api_now = {k: v for k, v in api_now.items() if k not in ("icon", "description")}
    assert await site.ok("PATCH", url, {}) == api_now
    before = await snapshot(db)
    for body, status in (
        ({"path": "docs"}, 409),
        ({"path": "-x"}, 400),
        ({"title": "x"}, 400),
        ({"defaultSiteSpace": root["id"]}, 400),
        ({"condition": ""}, 400),
    ):
        r = await site.call("PATCH", url, body)
        assert r.status_code == status, (body, r.text)
    assert await snapshot(db) == before

    # A second site space in the section, then made its default.
    ss = await site.ok("POST", "/site-spaces", {"spaceId": one, "sectionId": api["id"]}, status=201)
    assert (ss["section"], ss["default"], ss["path"]) == (api["id"], False, "one")
    patched = await site.ok("PATCH", url, {"defaultSiteSpace": ss["id"]})
    assert [(s["id"], s["default"]) for s in patched["siteSpaces"]] == [
        (ss_two, False),
        (ss["id"], True),
    ]
    # The site's default site space: in a section, that section becomes the default one.
    body = await site.ok("PATCH", "", {"defaultSiteSpace": ss_two})
    assert body["defaultSpace"] == two
    sections_now = (await site.ok("GET", "/sections"))["items"]
    assert [s["id"] for s in sections_now if s["default"]] == [api["id"]]
    await site.ok("PATCH", "", {"defaultSiteSection": first["id"], "defaultSiteSpace": ss["id"]})
    assert [s["id"] for s in (await site.ok("GET", "/sections"))["items"] if s["default"]] == [
        api["id"]
    ]
    await site.ok("PATCH", "", {"defaultSiteSection": first["id"]})
    # Without sectionId a site space goes to the default section.
    extra = await site.ok("POST", "/site-spaces", {"spaceId": two}, status=201)
    assert extra["section"] == first["id"]
    # A section keeps at least one site space.
    r = await site.call("DELETE", f"/site-spaces/{fourth['siteSpaces'][0]['id']}")
    assert r.json() == error(
        409, "A section shows at least one site space: delete the section instead"
    )

    # Moves among the top-level sections.
    await site.ok(
        "POST",
        f"{url}/move",
        {"position": {"before": {"type": "site-section", "siteSection": first["id"]}}},
    )
    order = [s["id"] for s in (await site.structure())["structure"]]
    assert order == [api["id"], first["id"], third["id"], fourth["id"]]
    r = await site.call(
        "POST",
        f"{url}/move",
        {"position": {"before": {"type": "site-section", "siteSection": api["id"]}}},
    )
    assert r.status_code == 400
    r = await site.call(
        "POST",
        f"{url}/move",
        {"position": {"after": {"type": "site-section", "siteSection": "nope"}}},
    )
    assert r.status_code == 400

    # The default section: set from the site, handed on when deleted.
    await site.ok("PATCH", "", {"defaultSiteSection": third["id"]})
    defaults = [s["id"] for s in (await site.ok("GET", "/sections"))["items"] if s["default"]]
    assert defaults == [third["id"]]
    r = await site.call("DELETE", f"/sections/{third['id']}")
    assert r.status_code == 205
    structure = await site.structure()
    assert [(s["id"], s["default"]) for s in structure["structure"]] == [
        (api["id"], True),
        (first["id"], False),
        (fourth["id"], False),
    ]
    assert (await site.ok("GET"))["siteSpaces"] == 5


async def test_section_groups(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    org, (admin,) = await factories.org_with_members(db)
    one, two, three = await spaces(client, org, admin, "One", "Two", "Three")
    site = await new_site(client, org, admin, [])
    a = await site.ok("POST", "/sections", {"spaceId": one}, status=201)
    b = await site.ok("POST", "/sections", {"spaceId": two}, status=201)
    c = await site.ok("POST", "/sections", {"spaceId": three}, status=201)
    r = await site.call(
        "POST",
        "/section-groups",
        {"title": "Guides", "icon": "book", "sections": [c["id"], b["id"]]},
    )
    assert r.status_code == 201, r.text
    group = r.json()
    b_in = {**b, "sectionGroup": group["id"]}
    c_in = {**c, "sectionGroup": group["id"]}
    assert group == {
        "object": "site-section-group",
        "id": group["id"],
        "title": "Guides",
        "icon": "book",
        "draft": False,
        "sections": [c_in, b_in],
        "children": [c_in, b_in],
    }
    assert await site.structure() == {"type": "sections", "structure": [a, group]}
    assert await site.ok("GET", "/section-groups") == listing(group)
    # Moves inside the group are among its sections only.
    await site.ok(
        "POST",
        f"/sections/{b['id']}/move",
        {"position": {"before": {"type": "site-section", "siteSection": c["id"]}}},
    )
    r = await site.call(
        "POST",
        f"/sections/{b['id']}/move",
        {"position": {"before": {"type": "site-section", "siteSection": a["id"]}}},
    )
    assert r.status_code == 400
    # The group moves among the top-level items.
    moved = await site.ok(
        "POST",
        f"/section-groups/{group['id']}/move",
        {"position": {"before": {"type": "site-section", "id": a["id"]}}},
    )
    assert moved == {**group, "sections": [b_in, c_in], "children": [b_in, c_in]}
    assert [i["id"] for i in (await site.structure())["structure"]] == [group["id"], a["id"]]
    # PATCH, with Prefer: return=minimal.
    patched = await site.ok(
        "PATCH", f"/section-groups/{group['id']}", {"title": "How-to", "icon": None}
    )
    assert patched == {
        "object": "site-section-group",
        "id": group["id"],
        "title": "How-to",
        "draft": False,
        "sections": [b_in, c_in],
        "children": [b_in, c_in],
    }
    r = await site.call(
        "PATCH",
        f"/section-groups/{group['id']}",
        {"title": "Howto"},
        minimal=True,
    )
    assert (r.status_code, r.headers["preference-applied"]) == (204, "return=minimal")
    # Out of and back into the group.
    r = await site.call("DELETE", f"/section-groups/{group['id']}/sections/{b['id']}")
    assert r.status_code == 205
    r = await site.call("DELETE", f"/section-groups/{group['id']}/sections/{a['id']}")
    assert r.json() == error(404, "Site section not found")
    assert [i["id"] for i in (await site.structure())["structure"]] == [
        group["id"],
        a["id"],
        b["id"],
    ]
    back = await site.ok(
        "POST", f"/section-groups/{group['id']}/sections", {"sectionId": b["id"]}, status=201
    )
    assert [s["id"] for s in back["sections"]] == [c["id"], b["id"]]
    # Deleting the group keeps its sections, back at the top level.
    r = await site.call("DELETE", f"/section-groups/{group['id']}")
    assert r.status_code == 205
    structure = await site.structure()
    assert structure == {"type": "sections", "structure": [a, c, b]}
    assert await site.ok("GET", "/section-groups") == listing()


async def test_spaces_leaving_leave_no_site_space(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    org, (admin,) = await factories.org_with_members(db)
    other_org = await factories.organization(db, owner=admin, title="Other")
    one, two, three = await spaces(client, org, admin, "One", "Two", "Three")
    collection = await factories.api_collection(client, org, admin, title="Box")
    boxed = (await factories.api_space(client, org, admin, title="Boxed", parent=collection["id"]))[
        "id"
    ]
    site = await new_site(client, org, admin, [])
    await site.ok("POST", "/sections", {"spaceId": one}, status=201)
    b = await site.ok("POST", "/sections", {"spaceId": two}, status=201)
    await site.ok("POST", "/site-spaces", {"spaceId": three, "sectionId": b["id"]}, status=201)
    await site.ok("POST", "/site-spaces", {"spaceId": boxed, "sectionId": b["id"]}, status=201)
    # Deleting the space of the default section's only site space: the section goes too, and
    # the default section passes on.
    r = await client.delete(f"/v1/spaces/{one}", headers=admin.headers)
    assert r.status_code == 205
    structure = await site.structure()
    assert [(s["id"], s["default"]) for s in structure["structure"]] == [(b["id"], True)]
    assert [(s["space"]["id"], s["default"]) for s in structure["structure"][0]["siteSpaces"]] == [
        (two, True),
        (three, False),
        (boxed, False),
    ]
    # Transferred to another organization: gone from the site, the default handed on.
    r = await client.post(
        f"/v1/spaces/{two}/transfer", json={"organization": other_org}, headers=admin.headers
    )
    assert r.status_code == 200, r.text
    # Deleted with its collection.
    r = await client.delete(f"/v1/collections/{collection['id']}", headers=admin.headers)
    assert r.status_code == 205
    structure = await site.structure()
    assert [(s["space"]["id"], s["default"]) for s in structure["structure"][0]["siteSpaces"]] == [
        (three, True)
    ]
    r = await client.delete(f"/v1/spaces/{three}", headers=admin.headers)
    assert await site.structure() == {"type": "siteSpaces", "structure": []}
    body = await site.ok("GET")
    assert (body["siteSpaces"], body["defaultSpace"]) == (0, None)
    async with db.connect() as conn:
        left = (await conn.execute(sa.select(sa.func.count()).select_from(site_spaces))).scalar()
    assert left == 0


async def test_rights_and_refusals(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    org, (admin, creator, reader, guest) = await factories.org_with_members(
        db, "create", "read", None
    )
    one, private = await spaces(client, org, admin, "One", "Secret")
    # Closed to the organization: only grants open it.
    r = await client.patch(
        f"/v1/spaces/{private}", json={"defaultLevel": None}, headers=admin.headers
    )
    assert r.status_code == 200, r.text
    open_space = (await factories.api_space(client, org, creator, title="Open"))["id"]
    site = await new_site(client, org, admin, [one])
    section = await site.ok("POST", "/sections", {"spaceId": one}, status=201)
    before = await snapshot(db)
    for who, method, path, body, status in (
        (reader, "POST", "/sections", {"spaceId": one}, 403),
        (reader, "POST", "/section-groups", {"title": "G"}, 403),
        (reader, "PATCH", f"/sections/{section['id']}", {"title": "New"}, 403),
        (reader, "DELETE", f"/sections/{section['id']}", None, 403),
        (guest, "GET", "/sections", None, 404),
        (guest, "GET", "/structure", None, 404),
        # The creator cannot see the admin's private space: as if it did not exist.
        (creator, "POST", "/site-spaces", {"spaceId": private}, 400),
        (admin, "POST", "/site-spaces", {"spaceId": "nope"}, 400),
        (admin, "POST", "/site-spaces", {"spaceId": one, "sectionId": "nope"}, 400),
        (admin, "POST", "/sections", {"spaceId": one, "title": "x" * 65}, 400),
        (admin, "POST", "/section-groups", {"title": "G", "sections": ["nope"]}, 400),
        (admin, "PATCH", "/sections/nope", {"title": "New"}, 404),
        (admin, "POST", "/site-spaces/nope/move", None, 404),
        (
            admin,
            "POST",
            f"/sections/{section['id']}/move",
            {"position": {"before": {"type": "site-space", "siteSpace": "x"}}},
            400,
        ),
    ):
        r = await site.client.request(method, f"{site.url}{path}", json=body, headers=who.headers)
        assert r.status_code == status, (who, method, path, r.text)
    assert await snapshot(db) == before
    r = await site.client.post(
        f"{site.url}/site-spaces", json={"spaceId": open_space}, headers=creator.headers
    )
    assert r.status_code == 201, r.text


async def test_concurrent_writers_keep_the_invariants(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    org, (admin,) = await factories.org_with_members(db)
    ids = await spaces(client, org, admin, *["Same"] * 6)
    site = await new_site(client, org, admin, [])
    results = await asyncio.gather(
        *(site.call("POST", "/sections", {"spaceId": s}) for s in ids[:3]),
        *(site.call("POST", "/site-spaces", {"spaceId": s}) for s in ids[3:]),
    )
    assert all(r.status_code in (201, 503) for r in results), [r.text for r in results]
    created = [r.json() for r in results if r.status_code == 201]
    assert created
    async with db.connect() as conn:
        sections = (await conn.execute(sa.select(site_sections))).mappings().all()
        rows = (await conn.execute(sa.select(site_spaces))).mappings().all()
    if sections:
        assert sum(s["is_default"] for s in sections) == 1
        assert len({s["path"] for s in sections}) == len(sections)
    for key in {r["section_key"] for r in rows}:
        siblings = [r for r in rows if r["section_key"] == key]
        assert sum(r["is_default"] for r in siblings) == 1
        assert len({r["path"] for r in siblings}) == len(siblings)
    # Concurrent deletes of the two defaults still leave one default each.
    structure = await site.structure()
    if structure["type"] == "sections" and len(structure["structure"]) > 1:
        firsts = [s["id"] for s in structure["structure"][:2]]
        await asyncio.gather(*(site.call("DELETE", f"/sections/{s}") for s in firsts))
        async with db.connect() as conn:
            sections = (await conn.execute(sa.select(site_sections))).mappings().all()
        assert sum(s["is_default"] for s in sections) == (1 if sections else 0)


async def test_adding_a_space_while_it_is_deleted_leaves_nothing_dangling(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    org, (admin,) = await factories.org_with_members(db)
    site = await new_site(client, org, admin, [])
    for _ in range(5):
        (space,) = await spaces(client, org, admin, "Racing")
        add, delete = await asyncio.gather(
            site.call("POST", "/site-spaces", {"spaceId": space}),
            client.delete(f"/v1/spaces/{space}", headers=admin.headers),
        )
        assert add.status_code in (201, 400, 503), add.text
        assert delete.status_code in (205, 503), delete.text
    async with db.connect() as conn:
        dangling = (
            await conn.execute(
                sa.select(sa.func.count())
                .select_from(
                    site_spaces.join(spaces_table, spaces_table.c.id == site_spaces.c.space_id)
                )
                .where(spaces_table.c.deleted_at.is_not(None))
            )
        ).scalar()
    assert dangling == 0
