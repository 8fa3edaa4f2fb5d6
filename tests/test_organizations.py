from __future__ import annotations

import httpx
from sqlalchemy.ext.asyncio import AsyncEngine

from tests import factories
from tests.conftest import BASE
from tests.helpers import error, org_body, snapshot


async def test_list_only_own_organizations_with_keyset_pages(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    me = await factories.user(db)
    other = await factories.user(db)
    await factories.organization(db, owner=other, title="Not Mine")
    ids = [await factories.organization(db, owner=me, title=f"Org {i}") for i in range(3)]
    ordered = sorted(ids)  # same createdAt (frozen clock): the id breaks the tie
    r = await client.get("/v1/orgs", params={"limit": 2}, headers=me.headers)
    assert r.status_code == 200
    page1 = r.json()
    titles = {i: f"Org {ids.index(i)}" for i in ids}
    assert page1["items"] == [org_body(i, "admin", title=titles[i]) for i in ordered[:2]]
    assert page1["count"] == 3
    r = await client.get(
        "/v1/orgs", params={"limit": 2, "page": page1["next"]["page"]}, headers=me.headers
    )
    assert r.json() == {
        "items": [org_body(ordered[2], "admin", title=titles[ordered[2]])],
        "count": 3,
    }


async def test_create_organization_makes_creator_admin(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    me = await factories.user(db)
    r = await client.post(
        "/v1/orgs",
        json={"title": "Handbook", "emailDomains": ["Example.com"], "useCase": "internalDocs"},
        headers=me.headers,
    )
    assert r.status_code == 201
    org_id = r.json()["id"]
    assert r.headers["location"] == f"{BASE}/v1/orgs/{org_id}"
    expected = org_body(
        org_id, "admin", title="Handbook", emailDomains=["example.com"], useCase="internalDocs"
    )
    assert r.json() == expected
    r = await client.get(f"/v1/orgs/{org_id}/members/{me.id}", headers=me.headers)
    assert r.json()["role"] == "admin"


async def test_get_organization_permissions_follow_role(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    org_id, people = await factories.org_with_members(db, "create", "read", None)
    for who, role in zip(people, ["admin", "create", "read", None], strict=True):
        r = await client.get(f"/v1/orgs/{org_id}", headers=who.headers)
        assert r.status_code == 200
        assert r.json() == org_body(org_id, role)


async def test_patch_organization(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    org_id, (admin,) = await factories.org_with_members(db)
    body = {
        "title": "New Title",
        "emailDomains": ["acme.io"],
        "hostname": "acme",
        "defaultRole": None,
        "logo": "https://cdn.acme.io/logo.png",
        "sso": True,
        "ai": True,
        "inviteLinks": False,
    }
    r = await client.patch(f"/v1/orgs/{org_id}", json=body, headers=admin.headers)
    assert r.status_code == 200
    expected = org_body(
        org_id,
        "admin",
        title="New Title",
        emailDomains=["acme.io"],
        hostname="acme",
        defaultRole=None,
        sso=True,
        ai=True,
        inviteLinks=False,
    )
    expected["urls"]["logo"] = "https://cdn.acme.io/logo.png"
    assert r.json() == expected
    assert (await client.get(f"/v1/orgs/{org_id}", headers=admin.headers)).json() == expected


async def test_patch_organization_refusals(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    org_id, (admin, editor) = await factories.org_with_members(db, "edit")
    other_admin = await factories.user(db)
    other = await factories.organization(db, owner=other_admin)
    r = await client.patch(
        f"/v1/orgs/{other}", json={"hostname": "taken"}, headers=other_admin.headers
    )
    assert r.status_code == 200
    before = await snapshot(db)
    r = await client.patch(f"/v1/orgs/{org_id}", json={"title": "x y"}, headers=editor.headers)
    assert (r.status_code, r.json()) == (
        403,
        error(403, "Only organization admins can change the organization"),
    )
    r = await client.patch(f"/v1/orgs/{org_id}", json={"hostname": "taken"}, headers=admin.headers)
    assert (r.status_code, r.json()) == (409, error(409, "The hostname 'taken' is already taken"))
    r = await client.patch(f"/v1/orgs/{org_id}", json={"title": None}, headers=admin.headers)
    assert (r.status_code, r.json()) == (
        400,
        error(400, "Invalid body field 'title': must not be null"),
    )
    r = await client.patch(
        f"/v1/orgs/{org_id}",
        json={"defaultContent": {"type": "site", "site": "nope"}},
        headers=admin.headers,
    )
    assert (r.status_code, r.json()) == (
        400,
        error(400, "Invalid body field 'defaultContent.site': site 'nope' not found"),
    )
    r = await client.patch(f"/v1/orgs/{org_id}", json={"title": " padded "}, headers=admin.headers)
    assert r.status_code == 400
    assert await snapshot(db) == before


async def test_subdomain_resolution(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    org_id, (admin,) = await factories.org_with_members(db)
    stranger = await factories.user(db)
    await client.patch(f"/v1/orgs/{org_id}", json={"hostname": "handbook"}, headers=admin.headers)
    r = await client.get("/v1/subdomains/handbook", headers=stranger.headers)
    assert r.json() == {
        "object": "subdomain",
        "subdomain": "handbook",
        "target": {"type": "organization", "organization": org_id},
        "isActive": True,
    }
    r = await client.get("/v1/subdomains/nothing-here", headers=stranger.headers)
    assert (r.status_code, r.json()) == (404, error(404, "Subdomain not found"))
    r = await client.get("/v1/subdomains/UPPER", headers=stranger.headers)
    assert r.status_code == 400


async def test_email_domain_lookup_answers_only_for_own_domain(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    org_id, (admin,) = await factories.org_with_members(db)
    await client.patch(
        f"/v1/orgs/{org_id}", json={"emailDomains": ["acme.io"]}, headers=admin.headers
    )
    colleague = await factories.user(db, email="jo@acme.io", name="Jo")
    r = await client.get("/v1/email-domains/acme.io/orgs", headers=colleague.headers)
    expected = org_body(org_id, None, emailDomains=["acme.io"])
    expected["permissions"] = {k: False for k in expected["permissions"]}
    assert r.json() == {"organizations": [expected]}
    r = await client.get("/v1/email-domains/acme.io/orgs", headers=admin.headers)
    assert r.json() == {"organizations": []}

    # The indexed domain table follows the organizations' settings.
    r = await client.post(
        "/v1/orgs",
        json={"title": "Second", "emailDomains": ["ACME.io", "x.io"]},
        headers=admin.headers,
    )
    assert r.status_code == 201, r.text
    second = r.json()["id"]
    r = await client.get("/v1/email-domains/acme.io/orgs", headers=colleague.headers)
    assert {o["id"] for o in r.json()["organizations"]} == {org_id, second}
    await client.patch(
        f"/v1/orgs/{org_id}", json={"emailDomains": ["other.io"]}, headers=admin.headers
    )
    await client.patch(f"/v1/orgs/{second}", json={"title": "Renamed"}, headers=admin.headers)
    r = await client.get("/v1/email-domains/acme.io/orgs", headers=colleague.headers)
    assert [o["id"] for o in r.json()["organizations"]] == [second]
    await client.patch(f"/v1/orgs/{second}", json={"emailDomains": None}, headers=admin.headers)
    r = await client.get("/v1/email-domains/acme.io/orgs", headers=colleague.headers)
    assert r.json() == {"organizations": []}


async def test_concurrent_claims_of_one_hostname(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    import asyncio

    first = await factories.user(db)
    second = await factories.user(db)
    org_1 = await factories.organization(db, owner=first)
    org_2 = await factories.organization(db, owner=second)
    results = await asyncio.gather(
        client.patch(f"/v1/orgs/{org_1}", json={"hostname": "racy"}, headers=first.headers),
        client.patch(f"/v1/orgs/{org_2}", json={"hostname": "racy"}, headers=second.headers),
    )
    assert sorted(r.status_code for r in results) == [200, 409], [r.text for r in results]
