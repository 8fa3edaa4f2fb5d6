"""Sites over HTTP: create (with spaces, or a new space), list with filters, get, update
(basename unique in the organization, proxy set and removed, defaults), publish/unpublish,
structure, delete; rights (guests 404, members 403 to act); refusals change nothing."""

from __future__ import annotations

from typing import Any

import httpx
from sqlalchemy.ext.asyncio import AsyncEngine

from docshelf.kit.clock import clock, isoformat
from tests import factories
from tests.conftest import BASE
from tests.factories import Who
from tests.helpers import error, listing, snapshot

SITE_NOT_FOUND = error(404, "Site not found")


def now() -> str:
    return isoformat(clock.now()) or ""


def site_permissions(role: str | None) -> dict[str, bool]:
    edit = role in ("admin", "create")
    admin = role == "admin"
    return {
        "view": True,
        "access": True,
        "edit": edit,
        "create": edit,
        "admin": admin,
        "installIntegration": admin,
        "viewAdaptiveSchema": True,
        "editAdaptiveSchema": admin,
    }


def site_body(
    site_id: str,
    org_id: str,
    *,
    title: str = "Untitled site",
    visibility: str = "public",
    published: bool = False,
    site_spaces: int = 0,
    default_space: str | None = None,
    features: tuple[str, ...] = ("sites-public-visibility",),
    role: str | None = "admin",
    address: str | None = None,
    **extra: Any,
) -> dict[str, Any]:
    urls = {
        "location": f"{BASE}/v1/orgs/{org_id}/sites/{site_id}",
        "app": f"{BASE}/o/{org_id}/sites/{site_id}/",
        "preview": address or f"{BASE}/{org_id}/{site_id}/",
    }
    if published:
        urls["published"] = address or f"{BASE}/{org_id}/{site_id}/"
    body: dict[str, Any] = {
        "object": "site",
        "id": site_id,
        "type": "basic",
        "appliedType": "basic",
        "title": title,
        "visibility": visibility,
        "published": published,
        "siteSpaces": site_spaces,
        "createdAt": now(),
        "adaptiveContent": {"enabled": False},
        "defaultLevel": "inherit",
        "agentsContext": "excluded",
        "defaultSpace": default_space,
        "features": [{"id": f, "plan": "basic", "frozen": False} for f in sorted(features)],
        "urls": urls,
        "permissions": site_permissions(role),
    }
    body.update(extra)
    return body


async def make_site(client: httpx.AsyncClient, org: str, who: Who, **body: Any) -> dict[str, Any]:
    r = await client.post(f"/v1/orgs/{org}/sites", json=body, headers=who.headers)
    assert r.status_code == 201, r.text
    site: dict[str, Any] = r.json()
    return site


async def test_create_get_and_list(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    org, (admin, creator, reader) = await factories.org_with_members(db, "create", "read")
    # The creator's own space (a new space is private: others below admin do not see it).
    space = await factories.api_space(client, org, creator, title="Guide")
    r = await client.post(f"/v1/orgs/{org}/sites", headers=admin.headers)
    assert r.status_code == 201, r.text
    plain = r.json()
    assert plain == site_body(plain["id"], org)
    assert r.headers["location"] == plain["urls"]["location"]
    r = await client.post(
        f"/v1/orgs/{org}/sites",
        json={"title": "Docs", "visibility": "share-link", "spaces": [space["id"]]},
        headers=creator.headers,
    )
    assert r.status_code == 201, r.text
    docs = r.json()
    assert docs == site_body(
        docs["id"],
        org,
        title="Docs",
        visibility="share-link",
        site_spaces=1,
        default_space=space["id"],
        features=("sites-share-links",),
        role="create",
    )
    r = await client.get(f"/v1/orgs/{org}/sites/{docs['id']}", headers=reader.headers)
    assert r.json() == {**docs, "permissions": site_permissions("read")}
    r = await client.get(f"/v1/orgs/{org}/sites", headers=admin.headers)
    # Same creation time (the clock is frozen): ordered by id.
    both = sorted(
        [plain, {**docs, "permissions": site_permissions("admin")}], key=lambda s: s["id"]
    )
    assert r.json() == listing(*both)
    r = await client.get(
        f"/v1/orgs/{org}/sites", params={"space": space["id"]}, headers=admin.headers
    )
    assert [s["id"] for s in r.json()["items"]] == [docs["id"]]
    r = await client.get(f"/v1/orgs/{org}/sites", params={"title": "dOc"}, headers=admin.headers)
    assert [s["id"] for s in r.json()["items"]] == [docs["id"]]
    r = await client.get(f"/v1/orgs/{org}/sites", params={"title": "%"}, headers=admin.headers)
    assert r.json() == listing()
    r = await client.get(f"/v1/orgs/{org}/sites?published=true", headers=admin.headers)
    assert r.json() == listing()
    r = await client.get(f"/v1/orgs/{org}/sites?published=false&limit=1", headers=admin.headers)
    page = r.json()
    assert page["count"] == 2 and [s["id"] for s in page["items"]] == [both[0]["id"]]
    r = await client.get(
        f"/v1/orgs/{org}/sites?published=false&page={page['next']['page']}",
        headers=admin.headers,
    )
    assert [s["id"] for s in r.json()["items"]] == [both[1]["id"]]


async def test_create_with_a_new_space(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    org, (admin,) = await factories.org_with_members(db)
    site = await make_site(client, org, admin, title="Handbook", spaces="empty")
    assert site["siteSpaces"] == 1
    r = await client.get(f"/v1/orgs/{org}/spaces", headers=admin.headers)
    (space,) = r.json()["items"]
    assert space["title"] == "Handbook" and site["defaultSpace"] == space["id"]


async def test_refusals_change_nothing(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    org, (admin, creator, reader, guest) = await factories.org_with_members(
        db, "create", "read", None
    )
    other_org, (other,) = await factories.org_with_members(db)
    foreign = await factories.api_space(client, other_org, other)
    site = await make_site(client, org, admin)
    url = f"/v1/orgs/{org}/sites/{site['id']}"
    before = await snapshot(db)
    cases = [
        (reader, "POST", f"/v1/orgs/{org}/sites", {}, 403),
        (guest, "POST", f"/v1/orgs/{org}/sites", {}, 404),
        (guest, "GET", url, None, 404),
        (other, "GET", url, None, 404),
        (admin, "POST", f"/v1/orgs/{org}/sites", {"spaces": [foreign["id"]]}, 400),
        (admin, "POST", f"/v1/orgs/{org}/sites", {"title": "x"}, 400),
        (admin, "POST", f"/v1/orgs/{org}/sites", {"type": "gold"}, 400),
        (reader, "PATCH", url, {"title": "New"}, 403),
        (creator, "PATCH", url, {"visibility": "unlisted"}, 403),
        (creator, "DELETE", url, None, 403),
        (creator, "POST", f"{url}/publish", None, 403),
        (admin, "PATCH", url, {"title": None}, 400),
        (admin, "PATCH", url, {"basename": "Not Safe"}, 400),
        (admin, "PATCH", url, {"proxy": "not a host"}, 400),
        (admin, "PATCH", url, {"defaultSiteSpace": "nope"}, 400),
        (admin, "PATCH", url, {"defaultSiteSection": "nope"}, 400),
    ]
    for who, method, path, body, status in cases:
        r = await client.request(method, path, json=body, headers=who.headers)
        assert r.status_code == status, (method, path, body, r.text)
        assert r.json()["error"]["code"] == status
    r = await client.get(url, headers=guest.headers)
    assert r.json() == SITE_NOT_FOUND
    assert await snapshot(db) == before


async def test_update_publish_and_delete(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    org, (admin,) = await factories.org_with_members(db)
    a = await make_site(client, org, admin, title="Alpha")
    b = await make_site(client, org, admin, title="Beta")
    url = f"/v1/orgs/{org}/sites/{a['id']}"
    r = await client.patch(
        url,
        json={
            "title": "Alpha docs",
            "visibility": "visitor-auth",
            "basename": "alpha",
            "adaptiveContent": {"enabled": True},
            "proxy": "example.com/docs",
        },
        headers=admin.headers,
    )
    assert r.status_code == 200, r.text
    address = f"{BASE}/{org}/alpha/"
    expected = site_body(
        a["id"],
        org,
        title="Alpha docs",
        visibility="visitor-auth",
        basename="alpha",
        address=address,
        adaptiveContent={"enabled": True},
        proxy={"origin": "example.com/docs", "target": address},
        features=(
            "sites-visitor-authentication",
            "sites-adaptive-content",
            "sites-custom-subdirectory",
        ),
    )
    assert r.json() == expected
    r = await client.patch(
        f"/v1/orgs/{org}/sites/{b['id']}", json={"basename": "alpha"}, headers=admin.headers
    )
    assert r.status_code == 409
    assert r.json() == error(409, "Another site of the organization has the basename 'alpha'")
    r = await client.patch(url, json={"proxy": None}, headers=admin.headers)
    expected.pop("proxy")
    expected["features"] = [
        f for f in expected["features"] if f["id"] != "sites-custom-subdirectory"
    ]
    assert r.json() == expected
    # Nothing to read yet: publishing would serve readers a 404, so it is refused.
    before = await snapshot(db)
    r = await client.post(f"{url}/publish", headers=admin.headers)
    assert (r.status_code, r.json()) == (
        400,
        error(
            400,
            "The site has no content to publish: add a space to it first "
            f"(POST /v1/orgs/{org}/sites/{a['id']}/site-spaces)",
        ),
    )
    assert await snapshot(db) == before
    space = await factories.api_space(client, org, admin, title="Guide")
    r = await client.post(
        f"{url}/site-spaces", json={"spaceId": space["id"]}, headers=admin.headers
    )
    assert r.status_code == 201, r.text
    expected.update(siteSpaces=1, defaultSpace=space["id"])
    r = await client.post(f"{url}/publish", headers=admin.headers)
    assert r.json() == {
        **expected,
        "published": True,
        "urls": {**expected["urls"], "published": address},
    }
    r = await client.get(f"/v1/orgs/{org}/sites?published=true", headers=admin.headers)
    assert [s["id"] for s in r.json()["items"]] == [a["id"]]
    r = await client.post(f"{url}/unpublish", headers=admin.headers)
    assert r.json() == expected
    r = await client.delete(url, headers=admin.headers)
    assert r.status_code == 205 and r.content == b""
    r = await client.get(url, headers=admin.headers)
    assert r.json() == SITE_NOT_FOUND
    r = await client.get(f"/v1/orgs/{org}/sites", headers=admin.headers)
    assert [s["id"] for s in r.json()["items"]] == [b["id"]]


async def test_published_url_follows_the_public_url_and_hostname(
    client: httpx.AsyncClient, db: AsyncEngine, settings: Any
) -> None:
    from tests.helpers import second_app

    org, (admin,) = await factories.org_with_members(db)
    site = await make_site(client, org, admin)
    url = f"/v1/orgs/{org}/sites/{site['id']}"
    space = await factories.api_space(client, org, admin, title="Guide")
    r = await client.post(
        f"{url}/site-spaces", json={"spaceId": space["id"]}, headers=admin.headers
    )
    assert r.status_code == 201, r.text
    r = await client.post(f"{url}/publish", headers=admin.headers)
    assert r.status_code == 200, r.text
    r = await client.patch(f"/v1/orgs/{org}", json={"hostname": "acme"}, headers=admin.headers)
    assert r.status_code == 200
    async with second_app(settings, public_url="https://docs.example.org/") as other:
        r = await other.get(url, headers=admin.headers)
    assert r.json()["urls"]["published"] == f"https://docs.example.org/acme/{site['id']}/"


async def test_default_space_is_each_sites_own(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    org, (admin,) = await factories.org_with_members(db)
    ids = [(await factories.api_space(client, org, admin, title=t))["id"] for t in "ABCD"]
    sites = []
    for first, second in ((ids[0], ids[1]), (ids[2], ids[3])):
        site = await make_site(client, org, admin)
        url = f"/v1/orgs/{org}/sites/{site['id']}"
        for space in (first, second):
            r = await client.post(f"{url}/sections", json={"spaceId": space}, headers=admin.headers)
            assert r.status_code == 201, r.text
        sites.append(url)
    for url, expected in zip(sites, (ids[0], ids[2]), strict=True):
        r = await client.get(url, headers=admin.headers)
        assert (r.json()["defaultSpace"], r.json()["siteSpaces"]) == (expected, 2)
