"""Site content tokens (auth.site_token), a security boundary: the `apiToken` that
`/v1/urls/published` hands GitBook's renderer reads exactly what the site shows that visitor,
read-only, and nothing else. Another site, another space, another organization, any write, a
condition the visitor fails, an expired or forged token, and anything the site stopped showing
are refused, and the refusal says no more than a 404 for a missing thing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import jwt
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from docshelf.kit.clock import clock
from tests import factories
from tests.helpers import error, snapshot
from tests.test_site_visitors import Built, build, token

EXPIRED = error(401, "Invalid or expired site token: resolve the published URL again")


async def _edit(
    client: httpx.AsyncClient, b: Built, space: str, changes: list[dict[str, Any]]
) -> None:
    r = await client.post(
        f"/v1/spaces/{space}/content", json={"changes": changes}, headers=b.admin.headers
    )
    assert r.status_code == 200, r.text


async def _lookup(client: httpx.AsyncClient, url: str, **visitor: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"url": url}
    if visitor:
        body["visitor"] = visitor
    r = await client.post("/v1/urls/published", json=body)
    assert r.status_code == 200, r.text
    found: dict[str, Any] = r.json()
    return found


def _as(tok: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {tok}"}


@pytest.fixture
async def site(client: httpx.AsyncClient, db: AsyncEngine) -> tuple[Built, dict[str, Any]]:
    org, (admin,) = await factories.org_with_members(db)
    b = await build(client, org, admin, "public")
    found = await _lookup(client, b.address)
    docs = found["space"]
    r = await client.patch(f"/v1/spaces/{docs}", json={"editMode": "live"}, headers=admin.headers)
    assert r.status_code == 200, r.text
    await _edit(
        client,
        b,
        docs,
        [
            {"operation": "insert_page", "title": "Open", "document": {"markdown": "Everyone."}},
            {
                "operation": "insert_page",
                "title": "Beta notes",
                "ref": "beta",
                "condition": "visitor.claims.beta == true",
                "document": {"markdown": "Only beta testers."},
            },
            {
                "operation": "insert_page",
                "title": "Beta child",
                "into": "beta",
                "document": {"markdown": "Below the beta page."},
            },
        ],
    )
    return b, await _lookup(client, b.address)


async def test_the_token_reads_what_the_site_shows(
    client: httpx.AsyncClient, site: tuple[Built, dict[str, Any]]
) -> None:
    b, found = site
    h = _as(found["apiToken"])
    space, revision = found["space"], found["revision"]
    r = await client.get(f"/v1/orgs/{b.org}/sites/{b.site['id']}/published", headers=h)
    assert r.status_code == 200, r.text
    assert r.json()["site"]["id"] == b.site["id"]
    r = await client.get(f"/v1/spaces/{space}", headers=h)
    assert r.status_code == 200 and r.json()["permissions"]["view"] is True
    assert r.json()["permissions"]["edit"] is False
    r = await client.get(f"/v1/spaces/{space}/revisions/{revision}", headers=h)
    assert r.status_code == 200, r.text
    # The page whose condition the visitor fails is left out, and what is below it.
    titles = [p["title"] for p in r.json()["pages"]]
    assert titles == ["Open"], titles
    pages = (await client.get(f"/v1/spaces/{space}/content/pages", headers=b.admin.headers)).json()
    ids = {p["title"]: p["id"] for p in pages["pages"]}
    ids["Beta child"] = next(p for p in pages["pages"] if p["title"] == "Beta notes")["pages"][0][
        "id"
    ]
    listed = (await client.get(f"/v1/spaces/{space}/revisions/{revision}/pages", headers=h)).json()
    assert [p["title"] for p in listed["pages"]] == ["Open"]
    base = f"/v1/spaces/{space}/revisions/{revision}/page"
    r = await client.get(f"{base}/{ids['Open']}/document", headers=h)
    assert r.status_code == 200 and r.json()["object"] == "document"
    for hidden in ("Beta notes", "Beta child"):
        for path in (f"{base}/{ids[hidden]}", f"{base}/{ids[hidden]}/document"):
            assert (await client.get(path, headers=h)).json() == error(404, "Page not found")
    # The same visitor with the claim, signed with the site's key, is shown it.
    beta = await _lookup(client, b.address, jwtToken=token(b.key, beta=True))
    hb = _as(beta["apiToken"])
    r = await client.get(f"{base}/{ids['Beta child']}/document", headers=hb)
    assert r.status_code == 200, r.text
    # Shown every page, that visitor's listing (built for them, from the presenter) is the
    # one kept for the space's members (encoded from its pieces).
    listing = f"/v1/spaces/{space}/revisions/{revision}/pages"
    built = await client.get(listing, headers=hb)
    kept = await client.get(listing, headers=b.admin.headers)
    assert built.json() == kept.json()
    assert len(kept.json()["pages"]) == 2
    # Search finds only what the visitor is shown.
    search = f"/v1/orgs/{b.org}/sites/{b.site['id']}/search"
    r = await client.post(search, json={"query": "beta", "scope": {"mode": "all"}}, headers=h)
    assert r.json() == {"items": [], "count": 0}
    r = await client.post(search, json={"query": "beta", "scope": {"mode": "all"}}, headers=hb)
    assert {p["title"] for i in r.json()["items"] for p in i["pages"]} == {
        "Beta notes",
        "Beta child",
    }


async def test_the_token_opens_nothing_else(
    client: httpx.AsyncClient, db: AsyncEngine, site: tuple[Built, dict[str, Any]]
) -> None:
    b, found = site
    h = _as(found["apiToken"])
    other_org, (stranger,) = await factories.org_with_members(db)
    theirs = await factories.api_space(client, other_org, stranger, title="Theirs")
    # A space of the same organization that no site shows, and another site of it.
    unshown = await factories.api_space(client, b.org, b.admin, title="Unshown")
    r = await client.post(
        f"/v1/orgs/{b.org}/sites",
        json={"title": "Other", "visibility": "public", "spaces": [unshown["id"]]},
        headers=b.admin.headers,
    )
    other_site = r.json()["id"]
    await client.post(f"/v1/orgs/{b.org}/sites/{other_site}/publish", headers=b.admin.headers)
    before = await snapshot(db)
    gets = [
        f"/v1/spaces/{unshown['id']}",
        f"/v1/spaces/{theirs['id']}",
        f"/v1/spaces/{theirs['id']}/content",
        f"/v1/orgs/{b.org}/sites/{other_site}/published",
        f"/v1/orgs/{other_org}/sites",
        f"/v1/orgs/{b.org}",
        f"/v1/orgs/{b.org}/spaces",
        f"/v1/orgs/{b.org}/sites/{b.site['id']}",
        f"/v1/orgs/{b.org}/sites/{b.site['id']}/publishing/auth",
        f"/v1/orgs/{b.org}/members",
        "/v1/orgs",
        "/v1/user",
        f"/v1/spaces/{found['space']}/change-requests",
        f"/v1/spaces/{found['space']}/search?query=open",
    ]
    for path in gets:
        r = await client.get(path, headers=h)
        assert (r.status_code, r.json()["error"]["code"]) == (404, 404), (path, r.text)
    writes = [
        ("POST", "/v1/orgs", {"title": "Mine"}),
        ("PATCH", f"/v1/spaces/{found['space']}", {"title": "Taken"}),
        ("POST", f"/v1/spaces/{found['space']}/content", {"changes": []}),
        ("POST", f"/v1/spaces/{found['space']}/change-requests", {"subject": "x"}),
        ("POST", f"/v1/orgs/{b.org}/sites/{b.site['id']}/unpublish", None),
        ("DELETE", f"/v1/spaces/{found['space']}", None),
    ]
    for method, path, body in writes:
        r = await client.request(method, path, json=body, headers=h)
        assert r.status_code == 404, (method, path, r.text)
    assert await snapshot(db) == before


async def test_forged_expired_and_withdrawn_tokens(
    client: httpx.AsyncClient, db: AsyncEngine, site: tuple[Built, dict[str, Any]]
) -> None:
    b, found = site
    published = f"/v1/orgs/{b.org}/sites/{b.site['id']}/published"
    claims = jwt.decode(found["apiToken"], options={"verify_signature": False})
    forged = [
        jwt.encode(claims, "not the install's key, but as long as one", algorithm="HS256"),
        jwt.encode(
            {**claims, "spaces": [*claims["spaces"], "x" * 20]},
            "a guessed key that is long enough for HS256",
            algorithm="HS256",
        ),
        # The genuine header and signature over a payload that widens the grant.
        ".".join(
            (
                found["apiToken"].split(".")[0],
                jwt.encode({**claims, "vis": "public", "spaces": ["x"]}, "k" * 32).split(".")[1],
                found["apiToken"].split(".")[2],
            )
        ),
    ]
    for tok in forged:
        assert (await client.get(published, headers=_as(tok))).json() == EXPIRED
    # The same visitor, site and day get the same token (the renderer's cache key).
    assert (await _lookup(client, b.address))["apiToken"] == found["apiToken"]
    # A day and five minutes later it has expired; a new look-up gives a new one.
    clock.advance(timedelta(days=1, minutes=6))
    try:
        assert (await client.get(published, headers=_as(found["apiToken"]))).json() == EXPIRED
        fresh = (await _lookup(client, b.address))["apiToken"]
        assert fresh != found["apiToken"]
        assert (await client.get(published, headers=_as(fresh))).status_code == 200
    finally:
        clock.advance(timedelta(days=-1, minutes=-6))
    h = _as(found["apiToken"])
    # Unpublished, the site's tokens stop at once.
    await client.post(f"{b.url}/unpublish", headers=b.admin.headers)
    assert (await client.get(published, headers=h)).json() == EXPIRED
    await client.post(f"{b.url}/publish", headers=b.admin.headers)
    assert (await client.get(published, headers=h)).status_code == 200
    # Made visitor-auth, a public visitor's token stops; a signed visitor's stops when the
    # site's key is regenerated.
    await client.patch(b.url, json={"visibility": "visitor-auth"}, headers=b.admin.headers)
    assert (await client.get(published, headers=h)).json() == EXPIRED
    signed = _as((await _lookup(client, b.address, jwtToken=token(b.key)))["apiToken"])
    assert (await client.get(published, headers=signed)).status_code == 200
    await client.post(f"{b.url}/publishing/auth/regenerate", headers=b.admin.headers)
    assert (await client.get(published, headers=signed)).json() == EXPIRED


async def test_share_link_tokens_follow_their_link(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    org, (admin,) = await factories.org_with_members(db)
    b = await build(client, org, admin, "share-link")
    # GitBook's form of a share link's address: the key as the segment after the site's.
    r = await client.post("/v1/urls/published", json={"url": f"{b.address}{b.inactive}/"})
    assert r.json() == error(404, "No published content at this URL")
    found = await _lookup(client, f"{b.address}{b.active}/")
    assert found["basePath"].endswith(f"/{b.active}/") and found["shareKey"] == b.active
    h = _as(found["apiToken"])
    published = f"/v1/orgs/{org}/sites/{b.site['id']}/published"
    assert (await client.get(published, headers=h)).status_code == 200
    links = (await client.get(f"{b.url}/share-links", headers=admin.headers)).json()["items"]
    for link in links:
        await client.patch(
            f"{b.url}/share-links/{link['id']}", json={"active": False}, headers=admin.headers
        )
    assert (await client.get(published, headers=h)).json() == EXPIRED


async def test_only_the_current_content_and_nobody_behind_it(
    client: httpx.AsyncClient, site: tuple[Built, dict[str, Any]]
) -> None:
    """The token reads the spaces' current revision: not their history, not a change request's
    draft, and not who wrote or merged what (a merge's change request, e-mails)."""
    b, before = site
    space = before["space"]
    h = b.admin.headers
    r = await client.post(
        f"/v1/spaces/{space}/change-requests", json={"subject": "Draft"}, headers=h
    )
    cr = r.json()
    r = await client.post(
        f"/v1/spaces/{space}/change-requests/{cr['id']}/content",
        json={"changes": [{"operation": "insert_page", "title": "Draft", "document": {}}]},
        headers=h,
    )
    assert r.status_code == 200, r.text
    draft = (await client.get(f"/v1/spaces/{space}/change-requests/{cr['id']}", headers=h)).json()
    found = await _lookup(client, b.address)
    t = _as(found["apiToken"])
    for revision in (draft["revision"], before["revision"]):
        r = await client.get(f"/v1/spaces/{space}/revisions/{revision}", headers=t)
        if revision == found["revision"]:
            continue
        assert r.json() == error(404, "Revision not found"), revision
    r = await client.post(f"/v1/spaces/{space}/change-requests/{cr['id']}/merge", headers=h)
    assert r.status_code == 200, r.text
    found = await _lookup(client, b.address)
    t = _as(found["apiToken"])
    r = await client.get(f"/v1/spaces/{space}/revisions/{found['revision']}", headers=t)
    assert r.status_code == 200 and r.json()["type"] == "merge"
    assert "mergedFrom" not in r.json()
    assert "@" not in r.text and "Draft" in r.text
    # The revision the first token was minted on is history now.
    r = await client.get(
        f"/v1/spaces/{space}/revisions/{before['revision']}", headers=_as(before["apiToken"])
    )
    assert r.json() == error(404, "Revision not found")


async def test_a_space_leaving_the_site_leaves_the_token(
    client: httpx.AsyncClient, site: tuple[Built, dict[str, Any]]
) -> None:
    b, found = site
    h = _as(found["apiToken"])
    others = [
        s
        for s in jwt.decode(found["apiToken"], options={"verify_signature": False})["spaces"]
        if s != found["space"]
    ]
    assert others
    assert (await client.get(f"/v1/spaces/{others[0]}", headers=h)).status_code == 200
    r = await client.delete(f"{b.url}/site-spaces/{b.private_ss}", headers=b.admin.headers)
    assert r.status_code == 205, r.text
    assert (await client.get(f"/v1/spaces/{others[0]}", headers=h)).json() == EXPIRED


async def test_a_visitor_token_bounds_the_site_token(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    # Visitor tokens are checked against the real time (PyJWT): the server's clock is set to it.
    clock.freeze(datetime.now(UTC).replace(microsecond=0))
    org, (admin,) = await factories.org_with_members(db)
    b = await build(client, org, admin, "visitor-auth")
    soon = clock.now().timestamp() + 600
    found = await _lookup(client, b.address, jwtToken=token(b.key, exp=soon))
    claims = jwt.decode(found["apiToken"], options={"verify_signature": False})
    assert claims["exp"] == int(soon)
    space = f"/v1/spaces/{found['space']}"
    h = _as(found["apiToken"])
    assert (await client.get(space, headers=h)).status_code == 200
    clock.advance(timedelta(minutes=11))
    try:
        # Nothing was committed meanwhile: no answer kept for the token outlives it.
        assert (await client.get(space, headers=h)).json() == EXPIRED
    finally:
        clock.advance(timedelta(minutes=-11))
