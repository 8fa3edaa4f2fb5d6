"""The published reader over HTTP (the browser tests drive the same pages in Chromium): pages
with their chrome, safety headers, 304s, search, cookies for share links and visitor tokens,
robots.txt and sitemap.xml, static assets, and what the API keeps answering."""

from __future__ import annotations

import re
import time

import httpx
import jwt
from sqlalchemy.ext.asyncio import AsyncEngine

from docshelf.reader.endpoints import CSP, assets
from tests import factories
from tests.factories import Who
from tests.helpers import error, snapshot
from tests.reader_site import Site, build, pages


def text_of(html: str, css_class: str) -> str:
    match = re.search(rf'class="{css_class}"[^>]*>(.*?)</nav>', html, re.S)
    assert match, css_class
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", match[1])).strip()


async def test_page_chrome_and_headers(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    org, (admin,) = await factories.org_with_members(db)
    s = await build(client, org, admin)
    before = await snapshot(db)
    r = await client.get(s.address)
    assert r.status_code == 200, r.text
    for name, value in {
        "content-security-policy": CSP,
        "x-content-type-options": "nosniff",
        "referrer-policy": "strict-origin-when-cross-origin",
        "x-frame-options": "DENY",
    }.items():
        assert r.headers[name] == value
    html = r.text
    assert "<title>Introduction · Acme Docs</title>" in html
    # Sections as tabs (the API section inside its group); their order is the site's.
    assert sorted(text_of(html, "tabs").split()) == ["API", "Acme", "Docs", "Reference"]
    assert text_of(html, "tree") == "Introduction Configuration Advanced Deployment"
    assert "Hidden page" not in html
    assert '<a class="next" rel="next" href="' + s.address + 'configuration">' in html
    assert 'href="#getting-started">Getting started</a>' in html  # table of contents
    assert "Guide v2" in text_of(html, "variants")
    assert "noindex" not in html

    r = await client.get(f"{s.address}configuration/advanced")
    assert r.status_code == 200
    assert text_of(r.text, "crumbs") == "Configuration"
    assert 'rel="prev" href="' + s.address + 'configuration"' in r.text
    # A hidden page opens by its address, marked not to be indexed.
    r = await client.get(f"{s.address}hidden-page")
    assert r.status_code == 200 and '<meta name="robots" content="noindex, nofollow">' in r.text
    # Sections and variants.
    r = await client.get(f"{s.address}{s.api_path}/")
    assert r.status_code == 200 and "<h1>Endpoints</h1>" in r.text
    r = await client.get(f"{s.address}{s.v2_path}/")
    assert r.status_code == 200 and "<h1>Welcome v2</h1>" in r.text
    # Not found: an HTML page with the same headers; the API's own 404s stay JSON.
    r = await client.get(f"{s.address}nope")
    assert r.status_code == 404 and "Page not found" in r.text
    assert r.headers["x-frame-options"] == "DENY"
    r = await client.get("/v1/nothing-here")
    assert r.json() == error(404, "Not found")
    assert await snapshot(db) == before


async def test_etag_304_and_static_assets(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    org, (admin,) = await factories.org_with_members(db)
    s = await build(client, org, admin)
    first = await client.get(s.address)
    etag = first.headers["etag"]
    assert first.headers["last-modified"]
    again = await client.get(s.address, headers={"If-None-Match": etag})
    assert again.status_code == 304 and again.content == b""
    assert (await client.get(s.address)).text == first.text  # kept rendering, same bytes
    # A change to the content is a new revision: a new ETag.
    r = await client.post(
        f"/v1/spaces/{s.main_space}/content",
        json={
            "changes": [
                {
                    "operation": "update_page",
                    "page": s.guide["Introduction"],
                    "document": {"markdown": "Changed."},
                }
            ]
        },
        headers=admin.headers,
    )
    assert r.status_code == 200, r.text
    changed = await client.get(s.address, headers={"If-None-Match": etag})
    assert changed.status_code == 200 and "Changed." in changed.text
    (css,) = (a.fingerprinted for a in assets().values() if a.name == "reader.css")
    stylesheet = (await client.get(f"/~reader/static/{css}")).text
    for name, asset in assets().items():
        r = await client.get(f"/~reader/static/{name}")
        assert r.status_code == 200 and r.content == asset.data
        assert r.headers["cache-control"] == "public, max-age=31536000, immutable"
        if name.endswith(".svg"):
            # Icons: named by the stylesheet, relative to it (so on every address of a site).
            assert r.headers["content-type"] == "image/svg+xml"
            assert f'url("{name}")' in stylesheet
        else:
            assert f"/~reader/static/{name}" in first.text
    assert sorted(a.name for a in assets().values()) == [
        "copied.svg", "copy.svg", "hint-danger.svg", "hint-info.svg", "hint-success.svg",
        "hint-warning.svg", "reader.css", "reader.js",
    ]  # fmt: skip
    assert (await client.get("/~reader/static/reader.css")).status_code == 404


async def test_search_page_and_json(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    org, (admin,) = await factories.org_with_members(db)
    s = await build(client, org, admin)
    r = await client.get(f"{s.address}~search", params={"q": "zanzibar"})
    assert r.status_code == 200
    assert f'href="{s.address}configuration#timeouts">Timeouts</a>' in r.text
    assert '<meta name="robots" content="noindex, nofollow">' in r.text
    r = await client.get(f"{s.address}~search.json", params={"q": "zanzibar"})
    (hit,) = r.json()["results"]
    assert hit["url"] == f"{s.address}configuration"
    assert hit["sections"][0]["url"] == f"{s.address}configuration#timeouts"
    # A hidden page's text is searchable where the page is readable; a query is escaped.
    r = await client.get(f"{s.address}~search", params={"q": "<script>alert(1)</script>"})
    assert r.status_code == 200 and "<script>alert(1)" not in r.text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in r.text


async def test_share_link_cookie(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    org, (admin,) = await factories.org_with_members(db)
    s = await build(client, org, admin, visibility="share-link")
    assert s.share_key
    r = await client.get(s.address)
    assert r.status_code == 404 and "Page not found" in r.text
    r = await client.get(f"{s.address}?shareKey=wrong")
    assert r.status_code == 404 and "Access refused" in r.text
    assert "set-cookie" not in r.headers
    r = await client.get(f"{s.address}configuration?shareKey={s.share_key}")
    assert r.status_code == 303 and r.headers["location"] == f"{s.address}configuration"
    cookie = r.headers["set-cookie"]
    assert f"docshelf_share={s.share_key}" in cookie
    assert "HttpOnly" in cookie and "SameSite=lax" in cookie and f"Path={s.address}" in cookie
    r = await client.get(f"{s.address}configuration")  # the client keeps the cookie
    assert r.status_code == 200 and "<h1>Configuration</h1>" in r.text
    assert '<meta name="robots" content="noindex, nofollow">' in r.text
    assert r.headers["cache-control"] == "private, no-cache"
    r = await client.get(f"{s.address}robots.txt")
    assert r.text == "User-agent: *\nDisallow: /\n"
    assert (await client.get(f"{s.address}sitemap.xml")).status_code == 404


async def test_visitor_token_cookie(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    org, (admin,) = await factories.org_with_members(db)
    s = await build(client, org, admin, visibility="visitor-auth")
    key = (await client.get(f"{s.url}/publishing/auth", headers=admin.headers)).json()["privateKey"]
    assert (await client.get(s.address)).status_code == 404
    expired = jwt.encode({"exp": int(time.time()) - 3600}, key, algorithm="HS256")
    assert (await client.get(f"{s.address}?jwt_token={expired}")).status_code == 404
    good = jwt.encode({"exp": int(time.time()) + 600}, key, algorithm="HS256")
    r = await client.get(f"{s.address}?jwt_token={good}")
    assert r.status_code == 303 and "docshelf_visitor=" in r.headers["set-cookie"]
    r = await client.get(s.address)
    assert r.status_code == 200 and "<h1>Introduction</h1>" in r.text
    assert sorted(text_of(r.text, "tabs").split()) == ["API", "Acme", "Docs", "Reference"]


async def beta_site(client: httpx.AsyncClient, org: str, admin: Who) -> Site:
    """The test site for visitor tokens, whose adaptive schema declares a `beta` claim."""
    s = await build(client, org, admin, visibility="visitor-auth")
    schema = {
        "type": "object",
        "properties": {"beta": {"type": "boolean", "description": "Beta tester"}},
        "additionalProperties": False,
    }
    r = await client.put(
        f"{s.url}/adaptive-schema", json={"jsonSchema": schema}, headers=admin.headers
    )
    assert r.status_code == 200, r.text
    return s


async def test_conditions_follow_the_visitor_claims(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    org, (admin,) = await factories.org_with_members(db)
    s = await beta_site(client, org, admin)
    h = admin.headers
    sections = (await client.get(f"{s.url}/sections", headers=h)).json()["items"]
    api = next(x for x in sections if x["path"] == s.api_path)
    r = await client.patch(
        f"{s.url}/sections/{api['id']}",
        json={"condition": "visitor.claims.beta == true"},
        headers=h,
    )
    assert r.status_code == 200, r.text
    key = (await client.get(f"{s.url}/publishing/auth", headers=h)).json()["privateKey"]
    exp = int(time.time()) + 600
    plain = jwt.encode({"exp": exp}, key, algorithm="HS256")
    beta = jwt.encode({"exp": exp, "beta": True}, key, algorithm="HS256")
    for token, sees_api in ((plain, False), (beta, True)):
        client.cookies.clear()
        assert (await client.get(f"{s.address}?jwt_token={token}")).status_code == 303
        home = await client.get(s.address)
        assert home.status_code == 200
        assert ("Reference" in home.text) is sees_api
        section = await client.get(f"{s.address}{s.api_path}/")
        assert section.status_code == (200 if sees_api else 404)
        found = await client.get(f"{s.address}~search.json", params={"q": "widgets"})
        assert [h["title"] for h in found.json()["results"]] == (["Endpoints"] if sees_api else [])


async def test_kept_bodies_link_only_pages_the_visitor_may_see(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    """A body is kept per set of conditional pages shown: a beta tester's rendering, which links
    the beta page, is never served to a visitor who may not see it."""
    org, (admin,) = await factories.org_with_members(db)
    s = await beta_site(client, org, admin)
    h = admin.headers
    (beta_page,) = await pages(client, s.main_space, admin, ("Beta", "Early.\n"))
    changes = [
        {
            "operation": "update_page",
            "page": beta_page,
            "condition": "visitor.claims.beta == true",
        },
        {
            "operation": "update_page",
            "page": s.guide["Introduction"],
            "document": {"markdown": f"See [the beta](/pages/{beta_page}).\n"},
        },
    ]
    r = await client.post(
        f"/v1/spaces/{s.main_space}/content", json={"changes": changes}, headers=h
    )
    assert r.status_code == 200, r.text
    key = (await client.get(f"{s.url}/publishing/auth", headers=h)).json()["privateKey"]
    exp = int(time.time()) + 600
    link = f'href="{s.address}beta"'
    for claims, sees in (({"beta": True}, True), ({}, False), ({"beta": True}, True)):
        client.cookies.clear()
        token = jwt.encode({"exp": exp, **claims}, key, algorithm="HS256")
        assert (await client.get(f"{s.address}?jwt_token={token}")).status_code == 303
        r = await client.get(f"{s.address}introduction")
        assert r.status_code == 200 and "the beta" in r.text
        assert (link in r.text) is sees, claims


async def test_robots_and_sitemap_of_public_site(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    org, (admin,) = await factories.org_with_members(db)
    s = await build(client, org, admin)
    r = await client.get(f"{s.address}robots.txt")
    assert r.text == (
        f"User-agent: *\nAllow: {s.address}\nSitemap: http://testserver{s.address}sitemap.xml\n"
    )
    r = await client.get(f"{s.address}sitemap.xml")
    locs = re.findall(r"<loc>(.*?)</loc>", r.text)
    assert f"http://testserver{s.address}configuration/advanced" in locs
    assert f"http://testserver{s.address}{s.api_path}/endpoints" in locs
    assert not any("hidden-page" in loc for loc in locs)


async def test_markdown_is_sanitised(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    org, (admin,) = await factories.org_with_members(db)
    evil = [
        (
            '<img src=x onerror="alert(1)">',
            "[x](javascript:alert(1)) <script>alert(2)</script>\n\n<iframe src=x></iframe>",
        ),
        ("Plain", "fine"),
    ]
    s = await build(client, org, admin, guide=[*evil, ("Third", "ok")])
    r = await client.get(s.address)
    assert r.status_code == 200
    assert not re.search(r"<[^>]*\son[a-z]+\s*=", r.text)
    assert "<script>alert" not in r.text and "javascript:" not in r.text
    assert "<iframe" not in r.text


async def test_big_page_renders_in_a_worker(client: httpx.AsyncClient, db: AsyncEngine) -> None:
    org, (admin,) = await factories.org_with_members(db)
    big = "".join(f"## Part {i}\n\n" + "word " * 60 + "\n\n" for i in range(120))
    assert len(big) > 20_000  # past render.OFFLOAD_CHARS
    s = await build(client, org, admin, guide=[("Big", big), ("Small", "s")])
    r = await client.get(s.address)
    assert r.status_code == 200
    assert r.text.count('<h2 id="part-') == 120
    head = await client.head(s.address)
    assert head.status_code == 200 and head.content == b""
    assert head.headers["etag"] == r.headers["etag"]


async def test_a_missing_page_keeps_the_site_chrome(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    """A page address that leads nowhere inside a site the visitor may open answers 404 with the
    site's header, search, tabs and the sidebar of the site space the address falls in."""
    org, (admin,) = await factories.org_with_members(db)
    s = await build(client, org, admin)
    before = await snapshot(db)
    guide = "Introduction Configuration Advanced Deployment"
    for path, tree, variant in (
        ("no-such-page", guide, "Guide v1"),
        ("configuration/advanced/deeper", guide, "Guide v1"),
        (f"{s.v2_path}/no-such-page", "Welcome v2", "Guide v2"),
        (f"{s.api_path}/no/such/page", "Endpoints", None),
        # a section or variant path that is no such thing reads as a page of the default one
        ("not-a-section/not-a-variant/page", guide, "Guide v1"),
    ):
        r = await client.get(f"{s.address}{path}")
        assert r.status_code == 404, path
        html = r.text
        assert "<title>Page not found · Acme Docs</title>" in html
        assert f'<div class="brand"><a href="{s.address}">Acme Docs</a></div>' in html
        assert f'<form class="search" role="search" action="{s.address}~search"' in html
        assert sorted(text_of(html, "tabs").split()) == ["API", "Acme", "Docs", "Reference"]
        assert text_of(html, "tree") == tree, path
        assert 'aria-current="page"' not in html.split('class="tree"')[1]
        if variant is not None:
            assert re.search(r"<summary>(.*?)</summary>", html.split('class="variants"')[1])[1] == (
                variant
            )
        else:
            assert 'class="variants"' not in html
        main = re.search(r"<main[^>]*>(.*)</main>", html, re.S)
        assert main is not None
        start = s.address + {"Welcome v2": f"{s.v2_path}/", "Endpoints": f"{s.api_path}/"}.get(
            tree, ""
        )
        assert re.sub(r"\s+", " ", main[1]).strip() == (
            "<h1>Page not found</h1> <p>Nothing is published at this address, or it is not "
            f'open to you.</p> <p><a href="{start}">Go to the start</a></p>'
        )
        assert '<meta name="robots" content="noindex, nofollow">' in html
        assert r.headers["cache-control"] == "private, no-cache"
        assert r.headers["content-security-policy"] == CSP
        head = await client.head(f"{s.address}{path}")
        assert head.status_code == 404 and head.content == b""
    assert await snapshot(db) == before


async def test_a_site_closed_to_the_visitor_shows_nothing_of_itself(
    client: httpx.AsyncClient, db: AsyncEngine
) -> None:
    """A missing page of a site the visitor may not open is the bare 404 of a site that does
    not exist; once their share key opens it, the same address shows the site's chrome."""
    org, (admin,) = await factories.org_with_members(db)
    shared = await build(client, org, admin, visibility="share-link")
    gated = await build(client, org, admin, visibility="visitor-auth")
    unpublished = await build(client, org, admin)
    r = await client.post(f"{unpublished.url}/unpublish", headers=admin.headers)
    assert r.status_code == 200, r.text
    missing = f"/{org}/site_nosuchsite/"
    bare = (await client.get(f"{missing}nope/deeper")).text.replace(missing, "<site>/")
    assert "Acme Docs" not in bare and 'class="tree"' not in bare
    for site in (shared, gated, unpublished):
        for path in ("nope", "nope/deeper", "configuration/nope", f"{site.v2_path}/nope"):
            r = await client.get(f"{site.address}{path}")
            assert r.status_code == 404
            body = r.text.replace(site.address, "<site>/")
            if path == "nope/deeper":
                assert body == bare
            assert body.replace(path, "") == bare.replace("nope/deeper", "")
            assert "cache-control" not in r.headers
    # A key that opens the site: kept in its cookie, then the missing page in the site's chrome.
    r = await client.get(f"{shared.address}nope?shareKey={shared.share_key}")
    assert r.status_code == 303 and r.headers["location"] == f"{shared.address}nope"
    assert f"docshelf_share={shared.share_key}" in r.headers["set-cookie"]
    r = await client.get(f"{shared.address}nope")
    assert r.status_code == 404
    assert text_of(r.text, "tree") == "Introduction Configuration Advanced Deployment"
    # A key that does not open it is refused as before, with nothing of the site.
    client.cookies.clear()
    r = await client.get(f"{shared.address}nope?shareKey=wrong")
    assert r.status_code == 404 and "Access refused" in r.text and "Acme" not in r.text
