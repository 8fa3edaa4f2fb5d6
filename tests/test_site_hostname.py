"""Custom hostnames: `PATCH …/sites/{id}` sets one (a Docshelf extension, admins only, GitBook's
`SiteHostname` pattern, unique across the install), the Site object shows it and its
`urls.published` moves there, and the reader answers requests whose Host header is that name
with the site at the root: share links and visitor tokens as anywhere, hostile Host headers
harmless (an unknown host is any other request; no address on a page comes from the header)."""

from __future__ import annotations

import re
import time

import httpx
import jwt
from sqlalchemy.ext.asyncio import AsyncEngine

from docshelf.config import Settings
from tests import factories
from tests.helpers import error, second_app, snapshot
from tests.reader_site import build

HOST = "docs.acme.example"


async def test_setting_a_hostname(
    client: httpx.AsyncClient, db: AsyncEngine, settings: Settings
) -> None:
    org, (admin, creator) = await factories.org_with_members(db, "create")
    space = await factories.api_space(client, org, admin, title="Docs", visibility="public")
    made = []
    for title in ("First site", "Second site"):
        r = await client.post(
            f"/v1/orgs/{org}/sites",
            json={"title": title, "spaces": [space["id"]]},
            headers=admin.headers,
        )
        assert r.status_code == 201, r.text
        made.append(f"/v1/orgs/{org}/sites/{r.json()['id']}")
    first, second = made
    before = await snapshot(db)
    r = await client.patch(first, json={"hostname": HOST}, headers=creator.headers)
    assert (r.status_code, r.json()) == (
        403,
        error(403, "Only organization admins can change this"),
    )
    for bad in (
        "Docs.Acme.example",  # upper case
        "acme.example",  # two labels
        "docs..acme.example",
        "-docs.acme.example",
        "docs.acme.example.",
        "docs.acme.example:8080",
        "docs.acme.example/x",
        "x" * 64 + ".acme.example",
        "",
    ):
        r = await client.patch(first, json={"hostname": bad}, headers=admin.headers)
        assert r.status_code == 400, bad
        assert r.json()["error"]["message"].startswith("Invalid body field 'hostname'"), r.text
    assert await snapshot(db) == before

    r = await client.patch(first, json={"hostname": HOST}, headers=admin.headers)
    assert r.status_code == 200, r.text
    site = r.json()
    assert site["hostname"] == HOST
    assert site["urls"]["preview"] == f"http://{HOST}/"  # DOCSHELF_PUBLIC_URL's scheme
    assert "published" not in site["urls"]
    r = await client.post(f"{first}/publish", headers=admin.headers)
    assert r.json()["urls"]["published"] == f"http://{HOST}/"
    listed = (await client.get(f"/v1/orgs/{org}/sites", headers=creator.headers)).json()
    assert {s["id"]: s.get("hostname") for s in listed["items"]} == {
        first.rpartition("/")[2]: HOST,
        second.rpartition("/")[2]: None,
    }
    structure = (await client.get(f"{first}/structure", headers=admin.headers)).json()
    assert structure["structure"][0]["urls"]["published"] == f"http://{HOST}/"

    # Taken by another site; the same again is no change.
    before = await snapshot(db)
    r = await client.patch(second, json={"hostname": HOST}, headers=admin.headers)
    assert (r.status_code, r.json()) == (
        409,
        error(409, f"Another site already uses the hostname '{HOST}'"),
    )
    assert (await client.patch(first, json={"hostname": HOST}, headers=admin.headers)).is_success
    assert await snapshot(db) == before
    # null removes it; the other site may then take it.
    r = await client.patch(first, json={"hostname": None}, headers=admin.headers)
    assert r.status_code == 200 and "hostname" not in r.json()
    assert r.json()["urls"]["published"] == f"http://testserver/{org}/{r.json()['id']}/"
    r = await client.patch(second, json={"hostname": HOST}, headers=admin.headers)
    assert r.status_code == 200 and r.json()["hostname"] == HOST

    # The server's own address is no site's.
    async with second_app(settings, public_url="https://read.acme.example") as other:
        before = await snapshot(db)
        r = await other.patch(first, json={"hostname": "read.acme.example"}, headers=admin.headers)
        assert (r.status_code, r.json()) == (
            400,
            error(
                400,
                "Invalid body field 'hostname': 'read.acme.example' is this server's own address",
            ),
        )
        assert await snapshot(db) == before


async def test_only_hostnames_the_operator_allows(
    client: httpx.AsyncClient, db: AsyncEngine, settings: Settings
) -> None:
    org, (admin,) = await factories.org_with_members(db)
    other_org, (other_admin,) = await factories.org_with_members(db)
    urls = {}
    for who, o in ((admin, org), (other_admin, other_org)):
        r = await client.post(f"/v1/orgs/{o}/sites", json={"title": "Site"}, headers=who.headers)
        assert r.status_code == 201, r.text
        urls[o] = f"/v1/orgs/{o}/sites/{r.json()['id']}"
    allowed = f"{org}=docs.acme.example, {org}=*.acme.dev, help.shared.example"
    async with second_app(settings, custom_hostnames=allowed) as c:
        for o, who, host, ok in (
            (org, admin, "docs.acme.example", True),
            (org, admin, "api.acme.dev", True),
            (org, admin, "help.shared.example", True),
            (org, admin, "acme.dev.evil.example", False),
            (org, admin, "docs.beta.example", False),
            (other_org, other_admin, "docs.acme.example", False),
            (other_org, other_admin, "www.acme.dev", False),
        ):
            before = await snapshot(db)
            r = await c.patch(urls[o], json={"hostname": host}, headers=who.headers)
            if ok:
                assert r.status_code == 200 and r.json()["hostname"] == host, r.text
                continue
            assert (r.status_code, r.json()) == (
                400,
                error(
                    400,
                    f"Invalid body field 'hostname': '{host}' is not a hostname this server "
                    "lets the organization use (its operator lists them in "
                    "DOCSHELF_CUSTOM_HOSTNAMES)",
                ),
            ), host
            assert await snapshot(db) == before
    # The default takes none.
    async with second_app(settings, custom_hostnames="") as c:
        r = await c.patch(urls[org], json={"hostname": "docs.zed.example"}, headers=admin.headers)
        assert r.status_code == 400, r.text


def _on(host: str) -> dict[str, str]:
    return {"Host": host}


async def test_the_reader_answers_at_the_hostname(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    org, (admin,) = await factories.org_with_members(db)
    s = await build(client, org, admin)
    r = await client.patch(s.url, json={"hostname": HOST}, headers=admin.headers)
    assert r.status_code == 200, r.text
    before = await snapshot(db)

    home = await client.get("/", headers=_on(HOST))
    assert home.status_code == 200, home.text
    html = home.text
    assert "<title>Introduction · Acme Docs</title>" in html
    # Every address on the page is a path at the host's root.
    assert '<a class="next" rel="next" href="/configuration">' in html
    assert s.address not in html and "testserver" not in html
    assert re.search(r'src="/~reader/static/reader\.[0-9a-f]+\.js"', html)
    asset = re.search(r'href="(/~reader/static/reader\.[0-9a-f]+\.css)"', html)
    assert asset and (await client.get(asset[1], headers=_on(HOST))).status_code == 200
    for host in (f"{HOST}:8443", HOST.upper()):
        again = await client.get("/", headers=_on(host))
        assert again.status_code == 200 and again.text == html, host
    r = await client.get("/configuration/advanced", headers=_on(HOST))
    assert r.status_code == 200 and "<h1>Advanced</h1>" in r.text
    r = await client.get(f"/{s.api_path}/", headers=_on(HOST))
    assert r.status_code == 200 and "<h1>Endpoints</h1>" in r.text
    r = await client.get("/~search", params={"q": "zanzibar"}, headers=_on(HOST))
    assert 'href="/configuration#timeouts">Timeouts</a>' in r.text
    r = await client.get("/robots.txt", headers=_on(HOST))
    assert r.text == f"User-agent: *\nAllow: /\nSitemap: http://{HOST}/sitemap.xml\n"
    r = await client.get("/sitemap.xml", headers=_on(HOST))
    assert f"<loc>http://{HOST}/configuration/advanced</loc>" in r.text
    r = await client.get("/no-such-page", headers=_on(HOST))
    assert r.status_code == 404 and "Page not found" in r.text
    # The API stays the API on any host.
    r = await client.get(f"/v1/orgs/{org}", headers={**admin.headers, **_on(HOST)})
    assert r.status_code == 200 and r.json()["id"] == org
    # The path address keeps working; its canonical address is the hostname's.
    assert (await client.get(f"{s.address}configuration")).status_code == 200
    r = await client.get("/v1/urls/published", params={"url": f"https://{HOST}/configuration"})
    assert r.status_code == 200, r.text
    found = r.json()
    assert (found["siteBasePath"], found["basePath"], found["pathname"]) == (
        "/",
        "/",
        "configuration",
    )
    assert found["page"] == s.guide["Configuration"]
    assert found["canonicalUrl"] == f"http://{HOST}/configuration"
    by_path = await client.get(
        "/v1/urls/published", params={"url": f"http://testserver{s.address}configuration"}
    )
    assert by_path.json()["canonicalUrl"] == f"http://{HOST}/configuration"
    for url in (f"http://{HOST}:8080/", "http://other.acme.example/", f"ftp://{HOST}/"):
        r = await client.get("/v1/urls/published", params={"url": url})
        assert r.json() == error(404, "No published content at this URL"), url

    # Hostile or unknown hosts are any other request: nothing on the page comes from them.
    for host in (
        "evil.example.com",
        "evil.example.com:80",
        "docs.acme.example.evil.com",
        "a@b",
        "x" * 600,
    ):
        # The server's own home page (ops/home.py), naming only the configured base URL.
        r = await client.get("/", headers={**_on(host), "Accept": "text/html"})
        assert r.status_code == 200 and "<h1>Docshelf</h1>" in r.text, host
        assert "evil" not in r.text and "acme" not in r.text, host
        r = await client.get(f"{s.address}configuration", headers=_on(host))
        assert r.status_code == 200 and "evil" not in r.text and 'href="/' in r.text, host
        assert f'href="{s.address}' in r.text
    assert await snapshot(db) == before

    # Cleared: the name is any other host on the very next request.
    r = await client.patch(s.url, json={"hostname": None}, headers=admin.headers)
    assert r.status_code == 200
    r = await client.get("/", headers=_on(HOST))
    assert r.status_code == 200 and r.json()["name"] == "Docshelf"
    assert (await client.get("/configuration", headers=_on(HOST))).status_code == 404


async def test_share_links_and_visitor_tokens_at_the_hostname(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    org, (admin,) = await factories.org_with_members(db)
    s = await build(client, org, admin, visibility="share-link")
    r = await client.patch(s.url, json={"hostname": HOST}, headers=admin.headers)
    assert r.status_code == 200, r.text
    assert (await client.get("/", headers=_on(HOST))).status_code == 404
    links = (await client.get(f"{s.url}/share-links", headers=admin.headers)).json()["items"]
    assert [link["urls"]["published"] for link in links] == [
        f"http://{HOST}/?shareKey={s.share_key}"
    ]
    r = await client.get(f"/configuration?shareKey={s.share_key}", headers=_on(HOST))
    assert r.status_code == 303 and r.headers["location"] == "/configuration"
    assert "Path=/;" in r.headers["set-cookie"] or r.headers["set-cookie"].endswith("Path=/")
    r = await client.get("/configuration", headers=_on(HOST))
    assert r.status_code == 200 and "<h1>Configuration</h1>" in r.text
    assert r.headers["cache-control"] == "private, no-cache"
    client.cookies.clear()
    r = await client.patch(s.url, json={"visibility": "visitor-auth"}, headers=admin.headers)
    assert r.status_code == 200
    key = (await client.get(f"{s.url}/publishing/auth", headers=admin.headers)).json()["privateKey"]
    token = jwt.encode({"exp": int(time.time()) + 600}, key, algorithm="HS256")
    assert (await client.get("/", headers=_on(HOST))).status_code == 404
    r = await client.get(f"/?jwt_token={token}", headers=_on(HOST))
    assert r.status_code == 303 and r.headers["location"] == "/"
    r = await client.get("/deployment", headers=_on(HOST))
    assert r.status_code == 200 and "<h1>Deployment</h1>" in r.text
