"""Share links of a site over HTTP: create (a secret from `secrets`, shown in urls.published),
list, rename, deactivate/reactivate, delete; only organization admins manage them; an inactive
or deleted link opens nothing (site.repository.active_share_link, the look-up visitors use)."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
from sqlalchemy.ext.asyncio import AsyncEngine

from docshelf.kit.clock import clock, isoformat
from docshelf.site import repository as site_repository
from tests import factories
from tests.conftest import BASE
from tests.helpers import error, listing, snapshot


def secret_of(link: dict[str, Any]) -> str:
    return parse_qs(urlsplit(link["urls"]["published"]).query)["shareKey"][0]


def link_body(
    link_id: str, address: str, secret: str, name: str, active: bool = True
) -> dict[str, Any]:
    return {
        "object": "share-link",
        "id": link_id,
        "createdAt": isoformat(clock.now()),
        "name": name,
        "active": active,
        "urls": {"published": f"{address}?shareKey={secret}"},
    }


async def test_share_links(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    org, (admin, creator, guest) = await factories.org_with_members(db, "create", None)
    r = await client.post(
        f"/v1/orgs/{org}/sites", json={"visibility": "share-link"}, headers=admin.headers
    )
    site = r.json()
    url = f"/v1/orgs/{org}/sites/{site['id']}/share-links"
    address = f"{BASE}/{org}/{site['id']}/"
    r = await client.post(url, json={"name": "Partners"}, headers=admin.headers)
    assert r.status_code == 201, r.text
    partners = r.json()
    secret = secret_of(partners)
    assert len(secret) >= 32
    assert partners == link_body(partners["id"], address, secret, "Partners")
    press = (await client.post(url, json={"name": ""}, headers=admin.headers)).json()
    assert secret_of(press) != secret
    r = await client.get(url, headers=admin.headers)
    assert r.json() == listing(*sorted([partners, press], key=lambda link: link["id"]))

    link_url = f"{url}/{partners['id']}"
    async with db.connect() as conn:
        assert (await site_repository.active_share_link(conn, site["id"], secret)) is not None
        assert (
            await site_repository.active_share_link(conn, site["id"], secret_of(press)[:-1])
        ) is None
    r = await client.patch(
        link_url, json={"name": "Resellers", "active": False}, headers=admin.headers
    )
    assert r.json() == link_body(partners["id"], address, secret, "Resellers", active=False)
    async with db.connect() as conn:
        assert await site_repository.active_share_link(conn, site["id"], secret) is None
    r = await client.patch(link_url, json={"active": True}, headers=admin.headers)
    assert r.json() == link_body(partners["id"], address, secret, "Resellers")
    # Refusals change nothing: members below admin 403, guests 404, bad bodies 400.
    before = await snapshot(db)
    for who, method, path, body, status in (
        (creator, "GET", url, None, 403),
        (creator, "POST", url, {"name": "x"}, 403),
        (creator, "PATCH", link_url, {"active": False}, 403),
        (creator, "DELETE", link_url, None, 403),
        (guest, "GET", url, None, 404),
        (admin, "POST", url, {}, 400),
        (admin, "POST", url, {"name": "x" * 51}, 400),
        (admin, "PATCH", link_url, {"active": None}, 400),
        (admin, "PATCH", f"{url}/nope", {"active": False}, 404),
    ):
        r = await client.request(method, path, json=body, headers=who.headers)
        assert r.status_code == status, (method, path, body, r.text)
    r = await client.get(url, headers=creator.headers)
    assert r.json() == error(403, "Only organization admins can manage a site's share links")
    assert await snapshot(db) == before
    r = await client.delete(link_url, headers=admin.headers)
    assert (r.status_code, r.content) == (205, b"")
    async with db.connect() as conn:
        assert await site_repository.active_share_link(conn, site["id"], secret) is None
    r = await client.get(url, headers=admin.headers)
    assert r.json() == listing(press)
    r = await client.patch(link_url, json={"active": True}, headers=admin.headers)
    assert r.json() == error(404, "Share link not found")


async def test_share_key_resolves_published_urls(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    """The spec's `shareKey` on the structure routes and the published site: an active link's
    key is carried by the published URLs given back, which then open for anyone; any other key
    is ignored."""
    org, (admin,) = await factories.org_with_members(db)
    space = await factories.api_space(client, org, admin, title="Guide")
    r = await client.post(
        f"/v1/orgs/{org}/sites",
        json={"title": "Partners", "visibility": "share-link", "spaces": [space["id"]]},
        headers=admin.headers,
    )
    site = f"/v1/orgs/{org}/sites/{r.json()['id']}"
    await client.post(f"{site}/publish", headers=admin.headers)
    link = (
        await client.post(f"{site}/share-links", json={"name": "P"}, headers=admin.headers)
    ).json()
    key = secret_of(link)
    address = f"{BASE}/{org}/{r.json()['id']}/"

    def urls(body: Any) -> list[str]:
        if isinstance(body, list):
            return [u for item in body for u in urls(item)]
        if not isinstance(body, dict):
            return []
        own = [body["urls"]["published"]] if "published" in body.get("urls", {}) else []
        return own + [u for k, v in body.items() if k != "space" for u in urls(v)]

    async def published(path: str, share_key: str | None) -> list[str]:
        params = {} if share_key is None else {"shareKey": share_key}
        r = await client.get(f"{site}/{path}", params=params, headers=admin.headers)
        return urls(r.json())

    for path in ("site-spaces", "structure", "published"):
        with_key = await published(path, key)
        assert with_key and all(u == f"{address}?shareKey={key}" for u in with_key), with_key
        for other in (None, "not-a-key", key[:-1]):
            assert await published(path, other) == [address] * len(with_key), (path, other)
    # A visitor from outside, whom the key lets in.
    outsider = await factories.user(db)
    r = await client.get(f"{site}/published", params={"shareKey": key}, headers=outsider.headers)
    assert r.status_code == 200, r.text
    assert set(urls(r.json())) == {f"{address}?shareKey={key}"}
    r = await client.get(f"{site}/published", headers=outsider.headers)
    assert (r.status_code, r.json()) == (404, error(404, "Site not found"))
    # A section's URLs, once the site has sections.
    api = await factories.api_space(client, org, admin, title="API")
    r = await client.post(
        f"{site}/sections", json={"title": "API", "spaceId": api["id"]}, headers=admin.headers
    )
    assert r.status_code == 201, r.text
    with_key = await published("sections", key)
    assert len(with_key) >= 2 and all(u.endswith(f"/?shareKey={key}") for u in with_key)
    assert all("?" not in u for u in await published("sections", "not-a-key"))
    # (bare first: opened with the key, the reader keeps it in a cookie)
    assert (await client.get(address[len(BASE) :])).status_code == 404
    r = await client.get(f"{address}?shareKey={key}"[len(BASE) :])
    assert r.status_code in (200, 302, 303, 307), r.text
