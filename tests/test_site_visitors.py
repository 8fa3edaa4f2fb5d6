"""Visitors of published sites over HTTP: the signing key (`…/publishing/auth`, regenerate), the
adaptive schema, `GET …/published` and `GET/POST /urls/published`, and the visitor matrix
{public, unlisted, share-link, visitor-auth, unpublished} x {anonymous, wrong key, inactive
link, valid link, expired JWT, wrong-key JWT, valid JWT without / with the claim}."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import httpx
import jwt
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from docshelf.kit.clock import clock, isoformat
from docshelf.site.published import DEFAULT_CUSTOMIZATION
from tests import factories
from tests.conftest import BASE
from tests.factories import Who
from tests.helpers import error, snapshot
from tests.test_share_links import secret_of

SCHEMA = {
    "type": "object",
    "properties": {
        "beta": {"type": "boolean", "description": "Beta tester"},
        "unsigned": {
            "type": "object",
            "description": "Unsigned claims of the site visitor.",
            "properties": {"preview": {"type": "boolean", "description": "Wants previews"}},
            "additionalProperties": False,
        },
    },
    "additionalProperties": False,
}
BETA = "visitor.claims.beta == true"


def token(key: str, *, beta: bool | None = None, exp: float | None = None) -> str:
    claims: dict[str, Any] = {"exp": int(exp if exp is not None else time.time() + 600)}
    if beta is not None:
        claims["beta"] = beta
    return jwt.encode(claims, key, algorithm="HS256")


@dataclass
class Built:
    org: str
    admin: Who
    site: dict[str, Any]
    url: str
    address: str
    default_section: str
    beta_section: str
    beta_path: str
    public_ss: str
    private_ss: str
    beta_ss: str
    key: str
    active: str
    inactive: str


async def build(
    client: httpx.AsyncClient, org: str, admin: Who, visibility: str, *, publish: bool = True
) -> Built:
    h = admin.headers
    docs = await factories.api_space(client, org, admin, title="Docs", visibility="public")
    beta = await factories.api_space(client, org, admin, title="Beta", visibility="unlisted")
    secret = await factories.api_space(client, org, admin, title="Secret")
    r = await client.post(
        f"/v1/orgs/{org}/sites",
        json={"title": f"Site {visibility}", "visibility": visibility, "spaces": [docs["id"]]},
        headers=h,
    )
    assert r.status_code == 201, r.text
    url = f"/v1/orgs/{org}/sites/{r.json()['id']}"
    r = await client.post(
        f"{url}/sections", json={"spaceId": beta["id"], "title": "Beta"}, headers=h
    )
    assert r.status_code == 201, r.text
    beta_section = r.json()
    r = await client.patch(
        f"{url}/sections/{beta_section['id']}", json={"condition": BETA}, headers=h
    )
    assert r.status_code == 200, r.text
    sections = (await client.get(f"{url}/sections", headers=h)).json()["items"]
    default = next(s for s in sections if s["default"])
    r = await client.post(
        f"{url}/site-spaces",
        json={"spaceId": secret["id"], "sectionId": default["id"]},
        headers=h,
    )
    assert r.status_code == 201, r.text
    private_ss = r.json()["id"]
    r = await client.put(f"{url}/adaptive-schema", json={"jsonSchema": SCHEMA}, headers=h)
    assert r.status_code == 200, r.text
    links = f"{url}/share-links"
    active = secret_of((await client.post(links, json={"name": "On"}, headers=h)).json())
    off = (await client.post(links, json={"name": "Off"}, headers=h)).json()
    await client.patch(f"{links}/{off['id']}", json={"active": False}, headers=h)
    if publish:
        assert (await client.post(f"{url}/publish", headers=h)).status_code == 200
    site = (await client.get(url, headers=h)).json()
    key = (await client.get(f"{url}/publishing/auth", headers=h)).json()["privateKey"]
    return Built(
        org=org,
        admin=admin,
        site=site,
        url=url,
        address=f"{BASE}/{org}/{site['id']}/",
        default_section=default["id"],
        beta_section=beta_section["id"],
        beta_path=beta_section["path"],
        public_ss=default["siteSpaces"][0]["id"],
        private_ss=private_ss,
        beta_ss=beta_section["siteSpaces"][0]["id"],
        key=key,
        active=active,
        inactive=secret_of(off),
    )


def shape(structure: dict[str, Any]) -> list[tuple[str, list[str]]]:
    assert structure["type"] == "sections"
    return [(s["id"], [ss["id"] for ss in s["siteSpaces"]]) for s in structure["structure"]]


VISITORS = [
    "anonymous",
    "wrong key",
    "inactive link",
    "valid link",
    "expired JWT",
    "wrong-key JWT",
    "JWT without claim",
    "JWT with claim",
]
# Which visitors open each kind of site, and which of them see the beta section.
OPENS = {
    "public": set(VISITORS),
    "unlisted": set(VISITORS),
    "share-link": {"valid link"},
    "visitor-auth": {"JWT without claim", "JWT with claim"},
    "unpublished": set(),
}
SEES_BETA = {"JWT with claim"}


def credentials(b: Built, who: str) -> tuple[str | None, str | None]:
    """(share key, visitor token) of each kind of visitor."""
    return {
        "anonymous": (None, None),
        "wrong key": ("not-the-key", None),
        "inactive link": (b.inactive, None),
        "valid link": (b.active, None),
        "expired JWT": (None, token(b.key, beta=True, exp=time.time() - 3600)),
        "wrong-key JWT": (None, token("another-key-entirely-of-forty-three-chars!", beta=True)),
        "JWT without claim": (None, token(b.key)),
        "JWT with claim": (None, token(b.key, beta=True)),
    }[who]


@pytest.mark.parametrize("kind", list(OPENS))
async def test_visitor_matrix(client: httpx.AsyncClient, db: AsyncEngine, kind: str) -> None:
    org, (admin,) = await factories.org_with_members(db)
    outsider = await factories.user(db)
    visibility = "public" if kind == "unpublished" else kind
    b = await build(client, org, admin, visibility, publish=kind != "unpublished")
    before = await snapshot(db)
    for who in VISITORS:
        share_key, jwt_token = credentials(b, who)
        params = {k: v for k, v in (("shareKey", share_key), ("visitorAuthToken", jwt_token)) if v}
        r = await client.get(f"{b.url}/published", params=params, headers=outsider.headers)
        query = f"?shareKey={share_key}" if share_key else ""
        payload: dict[str, Any] = {"url": f"{b.address}{query}"}
        if jwt_token:
            payload["visitor"] = {"jwtToken": jwt_token}
        root = await client.post("/v1/urls/published", json=payload)
        payload["url"] = f"{b.address}{b.beta_path}/{query}"
        gated = await client.post("/v1/urls/published", json=payload)
        cell = (kind, who)
        if who not in OPENS[kind]:
            assert r.status_code == 404, cell
            assert r.json() == error(404, "Site not found"), cell
            assert root.json() == error(404, "No published content at this URL"), cell
            assert gated.status_code == 404, cell
            continue
        # The site's visibility decides who reads its spaces: a private space published in
        # it is read by its audience, as in GitBook (`private` only means not public).
        expected = [(b.default_section, [b.public_ss, b.private_ss])]
        if who in SEES_BETA:
            expected.append((b.beta_section, [b.beta_ss]))
        assert r.status_code == 200, (cell, r.text)
        assert shape(r.json()["structure"]) == expected, cell
        assert root.status_code == 200, (cell, root.text)
        assert (root.json()["siteSection"], root.json()["siteSpace"]) == (
            b.default_section,
            b.public_ss,
        ), cell
        if who in SEES_BETA:
            assert gated.json()["siteSection"] == b.beta_section, cell
        else:
            # The gated section's path is, for them, a path of the default content where no
            # page is: exactly what a path that names nothing gives.
            assert gated.json()["siteSection"] == b.default_section, cell
            assert gated.json()["pathname"] == b.beta_path and "page" not in gated.json(), cell
    # Members see the whole site, gated section included, whatever it is.
    r = await client.get(f"{b.url}/published", headers=admin.headers)
    assert shape(r.json()["structure"]) == [
        (b.default_section, [b.public_ss, b.private_ss]),
        (b.beta_section, [b.beta_ss]),
    ]
    assert await snapshot(db) == before


async def test_publishing_auth(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    org, (admin, editor) = await factories.org_with_members(db, "create")
    b = await build(client, org, admin, "visitor-auth")
    auth = f"{b.url}/publishing/auth"
    r = await client.get(auth, headers=admin.headers)
    assert r.json() == {"object": "publishing-auth", "backend": "custom", "privateKey": b.key}
    assert len(b.key) >= 43
    body = {"backend": "custom", "fallbackURL": "https://example.com/login"}
    r = await client.patch(auth, json=body, headers=admin.headers)
    assert r.json() == {"object": "publishing-auth", "privateKey": b.key, **body}
    old = token(b.key)
    lookup = {"url": b.address, "visitor": {"jwtToken": old}}
    assert (await client.post("/v1/urls/published", json=lookup)).status_code == 200
    r = await client.post(f"{auth}/regenerate", headers=admin.headers)
    new_key = r.json()["privateKey"]
    assert new_key != b.key
    assert r.json() == {"object": "publishing-auth", "privateKey": new_key, **body}
    # The old key's tokens open nothing now; a redirect is asked for, so the fallback answers.
    assert (await client.post("/v1/urls/published", json=lookup)).status_code == 404
    r = await client.post("/v1/urls/published", json={**lookup, "redirectOnError": True})
    assert r.json() == {"target": "external", "redirect": "https://example.com/login"}
    lookup["visitor"] = {"jwtToken": token(new_key)}
    assert (await client.post("/v1/urls/published", json=lookup)).status_code == 200
    r = await client.get(
        "/v1/urls/published", params={"url": b.address, "visitorAuthToken": token(new_key)}
    )
    assert r.status_code == 200
    r = await client.patch(
        auth, json={"backend": "custom", "fallbackURL": None}, headers=admin.headers
    )
    assert r.json() == {"object": "publishing-auth", "backend": "custom", "privateKey": new_key}

    before = await snapshot(db)
    for method, path, json in (
        ("GET", "", None),
        ("PATCH", "", body),
        ("POST", "/regenerate", None),
    ):
        r = await client.request(method, f"{auth}{path}", json=json, headers=editor.headers)
        assert r.json() == error(403, "Only organization admins can see or change this")
    for bad in (
        {"backend": "integration"},
        {"backend": "custom", "fallbackURL": "not a url"},
        {},
    ):
        r = await client.patch(auth, json=bad, headers=admin.headers)
        assert r.status_code == 400, bad
    assert await snapshot(db) == before


async def test_adaptive_schema(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    org, (admin, viewer) = await factories.org_with_members(db, "read")
    r = await client.post(f"/v1/orgs/{org}/sites", json={}, headers=admin.headers)
    site = r.json()
    url = f"/v1/orgs/{org}/sites/{site['id']}/adaptive-schema"
    r = await client.get(url, headers=viewer.headers)
    assert r.json() == {
        "object": "site-adaptive-schema",
        "jsonSchema": {"type": "object", "properties": {}, "additionalProperties": False},
        "updatedAt": site["createdAt"],
    }
    r = await client.put(url, json={"jsonSchema": SCHEMA}, headers=admin.headers)
    expected = {
        "object": "site-adaptive-schema",
        "jsonSchema": SCHEMA,
        "updatedAt": isoformat(clock.now()),
    }
    assert r.json() == expected
    assert (await client.get(url, headers=viewer.headers)).json() == expected
    before = await snapshot(db)
    r = await client.put(url, json={"jsonSchema": SCHEMA}, headers=viewer.headers)
    assert r.json() == error(403, "Only organization admins can change the schema")
    for bad in (
        {**SCHEMA, "$id": "https://example.com/s"},
        {**SCHEMA, "additionalProperties": True},
        {
            "type": "object",
            "properties": {"beta": {"type": "boolean"}},
            "additionalProperties": False,
        },
        {
            "type": "object",
            "properties": {"x": {"type": 3, "description": "?"}},
            "additionalProperties": False,
        },
        {"type": "array"},
    ):
        r = await client.put(url, json={"jsonSchema": bad}, headers=admin.headers)
        assert r.status_code == 400, (bad, r.text)
        assert r.json()["error"]["message"].startswith("Invalid body field 'jsonSchema'")
    assert await snapshot(db) == before


async def test_published_content_site_whole_body(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    org, (admin,) = await factories.org_with_members(db)
    outsider = await factories.user(db)
    b = await build(client, org, admin, "public")
    r = await client.get(f"{b.url}/published", headers=outsider.headers)
    assert r.status_code == 200, r.text
    body = r.json()
    structure = (await client.get(f"{b.url}/structure", headers=admin.headers)).json()
    default = structure["structure"][0]
    assert [ss["id"] for ss in default["siteSpaces"]] == [b.public_ss, b.private_ss]
    for n, ss in enumerate(default["siteSpaces"]):
        # A visitor holds no role on the space.
        ss["space"] = body["structure"]["structure"][0]["siteSpaces"][n]["space"]
    permissions = dict.fromkeys(b.site["permissions"], False)
    assert body == {
        "object": "published-content-site",
        "site": {**b.site, "permissions": permissions},
        "structure": {"type": "sections", "structure": [default]},
        "customizations": {
            "site": DEFAULT_CUSTOMIZATION,
            "siteSpaces": {
                b.public_ss: DEFAULT_CUSTOMIZATION,
                b.private_ss: DEFAULT_CUSTOMIZATION,
            },
        },
        "scripts": [],
    }
    assert (
        body["structure"]["structure"][0]["siteSpaces"][0]["space"]["id"]
        == (default["siteSpaces"][0]["space"]["id"])
    )
    # The gated section's address leads a visitor without the claim to no page.
    r = await client.get("/v1/urls/published", params={"url": f"{b.address}{b.beta_path}/"})
    assert r.json()["siteSection"] == b.default_section and "page" not in r.json()
    r = await client.get("/v1/urls/published", params={"url": b.address})
    space = default["siteSpaces"][0]["space"]
    site_base = f"/{org}/{b.site['id']}/"
    found = r.json()
    assert found == {
        "site": b.site["id"],
        "siteSection": b.default_section,
        "siteSpace": b.public_ss,
        "space": space["id"],
        "revision": found["revision"],
        "pathname": "",
        "basePath": site_base,
        "siteBasePath": site_base,
        "apiToken": found["apiToken"],
        "organization": org,
        # The default section stood in for one the URL did not name: a longer URL may name it.
        "complete": False,
        "canonicalUrl": b.address,
        **({"page": found["page"]} if "page" in found else {}),
    }
    # The site content token (GitBook's SiteAPIToken) names what it opens, for a day.
    claims = jwt.decode(found["apiToken"], options={"verify_signature": False})
    assert claims == {
        "aud": "docshelf-site",
        "iat": claims["iat"],
        "exp": claims["iat"] + 86400 + 300,
        "kind": "site",
        "organization": org,
        "site": b.site["id"],
        "siteSection": b.default_section,
        "siteSpace": b.public_ss,
        "space": space["id"],
        "spaces": sorted({space["id"], default["siteSpaces"][1]["space"]["id"]}),
        "visitorType": "human",
        "claims": {"visitor": {"claims": {"unsigned": {}}}},
        "vis": "public",
    }
    assert claims["iat"] % 86400 == 0
    # Unsigned claims count where the schema declares them: a site space for previewers.
    r = await client.patch(
        f"{b.url}/site-spaces/{b.public_ss}",
        json={"condition": "visitor.claims.unsigned.preview"},
        headers=admin.headers,
    )
    assert r.status_code == 200, r.text
    # Without the claim the default variant is not shown: the first one that is, instead.
    lookup: dict[str, Any] = {"url": b.address}
    r = await client.post("/v1/urls/published", json=lookup)
    assert r.json()["siteSpace"] == b.private_ss
    lookup["visitor"] = {"unsignedClaims": {"preview": "yes"}}  # not a boolean: dropped
    r = await client.post("/v1/urls/published", json=lookup)
    assert r.json()["siteSpace"] == b.private_ss
    lookup["visitor"] = {"unsignedClaims": {"preview": True}}
    assert (await client.post("/v1/urls/published", json=lookup)).json()["siteSpace"] == (
        b.public_ss
    )


async def test_condition_syntax_is_checked_when_saved(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    org, (admin,) = await factories.org_with_members(db)
    b = await build(client, org, admin, "public")
    before = await snapshot(db)
    for path in (f"/sections/{b.beta_section}", f"/site-spaces/{b.public_ss}"):
        for bad in ("visitor.claims.beta ==", "window.alert(1)", "(" * 40 + "true" + ")" * 40):
            r = await client.patch(f"{b.url}{path}", json={"condition": bad}, headers=admin.headers)
            assert r.status_code == 400, (path, bad)
            assert r.json()["error"]["message"].startswith("Invalid body field 'condition'")
    assert await snapshot(db) == before


async def test_published_lookup_refusals(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    org, (admin,) = await factories.org_with_members(db)
    b = await build(client, org, admin, "public")
    before = await snapshot(db)
    for url in (
        "https://elsewhere.example/x/y/",
        f"{BASE}/",
        f"{BASE}/{org}/",
        f"{BASE}/{org}/no-such-site/",
        f"{BASE}/nobody/{b.site['id']}/",
    ):
        r = await client.get("/v1/urls/published", params={"url": url})
        assert r.json() == error(404, "No published content at this URL"), url
    # GitBook's look-up resolves the site, section and site space; what path is left is the
    # client's to show (a page, its 404, `~gitbook/search`): no `page` where there is none.
    r = await client.get("/v1/urls/published", params={"url": f"{b.address}no-such-page"})
    assert r.status_code == 200 and r.json()["pathname"] == "no-such-page"
    assert "page" not in r.json()
    for body in ({}, {"url": ""}, {"url": b.address, "visitor": {"jwtToken": 3}}):
        r = await client.post("/v1/urls/published", json=body)
        assert r.status_code == 400, body
    # Oversized or over-deep unsigned claims are ignored, not refused.
    big = {"url": b.address, "visitor": {"unsignedClaims": {"x": "a" * 10000}}}
    assert (await client.post("/v1/urls/published", json=big)).status_code == 200
    deep: Any = True
    for _ in range(200):
        deep = {"x": deep}
    big["visitor"] = {"unsignedClaims": deep}
    assert (await client.post("/v1/urls/published", json=big)).status_code == 200
    r = await client.get("/v1/urls/published", params={"url": "http://[oops/x/y/"})
    assert r.json() == error(404, "No published content at this URL")
    assert await snapshot(db) == before


async def test_page_conditions(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    org, (admin,) = await factories.org_with_members(db)
    space = await factories.api_space(
        client, org, admin, title="Docs", visibility="public", editMode="live"
    )
    content = f"/v1/spaces/{space['id']}/content"
    before = await snapshot(db)
    bad = {"operation": "insert_page", "title": "X", "document": {}, "condition": "beta ="}
    r = await client.post(content, json={"changes": [bad]}, headers=admin.headers)
    assert r.status_code == 400, r.text
    assert await snapshot(db) == before
    pages = [
        {"operation": "insert_page", "title": "Intro", "slug": "intro", "document": {}},
        {
            "operation": "insert_page",
            "title": "Secret",
            "slug": "secret",
            "document": {},
            "condition": BETA,
        },
    ]
    r = await client.post(content, json={"changes": pages}, headers=admin.headers)
    assert r.status_code == 200, r.text
    intro, secret = (c["page"]["id"] for c in r.json()["changes"])
    r = await client.post(
        f"/v1/orgs/{org}/sites",
        json={"visibility": "visitor-auth", "spaces": [space["id"]]},
        headers=admin.headers,
    )
    site = r.json()
    url = f"/v1/orgs/{org}/sites/{site['id']}"
    await client.post(f"{url}/publish", headers=admin.headers)
    key = (await client.get(f"{url}/publishing/auth", headers=admin.headers)).json()["privateKey"]
    address = f"{BASE}/{org}/{site['id']}/"

    async def page(path: str, jwt_token: str) -> Any:
        body = {"url": f"{address}{path}", "visitor": {"jwtToken": jwt_token}}
        r = await client.post("/v1/urls/published", json=body)
        return r.json().get("page") if r.status_code == 200 else r.status_code

    # No adaptive schema: signed claims count as signed, as they are.
    assert await page("", token(key)) == intro
    assert await page("intro", token(key)) == intro
    assert await page("secret", token(key)) is None
    assert await page("secret", token(key, beta=False)) is None
    assert await page("secret", token(key, beta=True)) == secret
