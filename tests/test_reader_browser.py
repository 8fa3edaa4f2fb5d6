"""The published reader in a real browser: Debian's Chromium, headless, driven by Playwright,
against the real server (`docshelf serve`). Navigation through sections, variants, the sidebar
and prev/next; search from the box to a result's anchor; screenshots at desktop and phone widths
(test-artifacts/reader/); XSS payloads that must never run; axe-core on every page type; and the
visitor matrix with the browser's own cookies."""

from __future__ import annotations

import base64
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from docshelf.config import Settings
from tests import factories
from tests.browser import ARTIFACTS, axe_source, need_chromium, running_server
from tests.reader_site import build, pages

DESKTOP = {"width": 1280, "height": 860}
PHONE = {"width": 390, "height": 844}


@pytest.fixture
async def browser() -> AsyncIterator[Any]:
    executable = need_chromium()
    from playwright.async_api import async_playwright

    async with async_playwright() as p:
        launched = await p.chromium.launch(executable_path=executable, headless=True)
        try:
            yield launched
        finally:
            await launched.close()


@pytest.fixture
def server(settings: Settings, db: AsyncEngine, tmp_path: Path) -> Any:
    with running_server(settings.resolved_database_url, tmp_path) as base:
        yield base


async def _axe(page: Any) -> list[dict[str, Any]]:
    await page.add_script_tag(content=axe_source())
    result = await page.evaluate(
        "async () => (await axe.run(document, {resultTypes: ['violations']})).violations"
    )
    return [v for v in result if v["impact"] in ("serious", "critical")]


async def test_navigation_search_screenshots_and_axe(
    server: str, db: AsyncEngine, browser: Any
) -> None:
    org, (admin,) = await factories.org_with_members(db)
    async with httpx.AsyncClient(base_url=server, timeout=30) as client:
        s = await build(client, org, admin)
    home = f"{server}{s.address}"
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    context = await browser.new_context(viewport=DESKTOP)
    page = await context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))

    await page.goto(home)
    assert await page.title() == "Introduction · Acme Docs"
    await page.screenshot(path=ARTIFACTS / "desktop-page.png", full_page=True)
    # prev/next through the sidebar's reading order
    await page.click("a[rel=next]")
    await page.wait_for_url(f"{home}configuration")
    await page.click("a[rel=next]")
    await page.wait_for_url(f"{home}configuration/advanced")
    assert await page.inner_text("nav.crumbs") == "Configuration"
    await page.click("a[rel=prev]")
    await page.wait_for_url(f"{home}configuration")
    # the sidebar
    await page.click("nav.tree >> text=Deployment")
    await page.wait_for_url(f"{home}deployment")
    assert await page.inner_text("main h1") == "Deployment"
    assert await page.locator("nav.tree >> text=Hidden page").count() == 0
    # the table of contents jumps to a heading
    await page.click("nav.toc >> text=Kubernetes")
    assert page.url == f"{home}deployment#kubernetes"
    # variants: the switcher opens, and its other entry shows the other space
    await page.click("nav.variants summary")
    await page.click("nav.variants >> text=Guide v2")
    await page.wait_for_url(f"{home}{s.v2_path}/")
    assert await page.inner_text("main h1") == "Welcome v2"
    # sections: the API section sits in the "Reference" group
    await page.click("nav.tabs summary")
    await page.click("nav.tabs >> text=API")
    await page.wait_for_url(f"{home}{s.api_path}/")
    assert await page.inner_text("main h1") == "Endpoints"

    # search from the box, as you type (reader.js), then without JavaScript (the form)
    await page.goto(home)
    await page.fill("#q", "zanzib")
    live = page.locator("#live-results a.live-result").first
    await live.wait_for()
    await live.click()
    await page.wait_for_url(f"{home}configuration#timeouts")
    await page.fill("#q", "zanzibar")
    await page.press("#q", "Enter")
    await page.wait_for_url(f"{home}~search?q=zanzibar")
    await page.screenshot(path=ARTIFACTS / "desktop-search.png", full_page=True)
    await page.click("ol.results a[href$='#timeouts']")
    await page.wait_for_url(f"{home}configuration#timeouts")
    assert await page.locator("#timeouts").is_visible()

    phone = await browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True)
    small = await phone.new_page()
    await small.goto(f"{home}deployment")
    # On a phone the menu starts folded and the page fits the width.
    assert await small.locator("nav.tree").is_hidden()
    width = await small.evaluate("document.documentElement.scrollWidth")
    assert width <= PHONE["width"]
    await small.screenshot(path=ARTIFACTS / "phone-page.png", full_page=True)
    await small.click(".sidebar-toggle summary")
    assert await small.locator("nav.tree").is_visible()
    await small.screenshot(path=ARTIFACTS / "phone-menu.png")
    await phone.close()

    # axe-core on each page type (its script is injected, so this context ignores the CSP)
    checked = await browser.new_context(viewport=DESKTOP, bypass_csp=True)
    audit = await checked.new_page()
    for kind, url in {
        "page": f"{home}configuration/advanced",
        "section": f"{home}{s.api_path}/",
        "search": f"{home}~search?q=zanzibar",
        "empty search": f"{home}~search?q=nothingmatches",
        "not found": f"{home}no-such-page",
        "refused": f"{home}?shareKey=not-a-key",
    }.items():
        await audit.goto(url)
        assert await _axe(audit) == [], kind
    await checked.close()
    await context.close()
    assert errors == []


PAYLOADS = [
    "<script>window.__xss=1;alert(1)</script>",
    '<img src=x onerror="window.__xss=1;alert(1)">',
    '<svg onload="window.__xss=1;alert(1)">',
    "<svg><script>window.__xss=1</script></svg>",
    '<iframe src="javascript:window.top.__xss=1"></iframe>',
    '<body onload="window.__xss=1">',
    '<a href="javascript:window.__xss=1">click</a>',
    '<a href="JaVaScRiPt:window.__xss=1">click</a>',
    '<a href="java&#x09;script:window.__xss=1">tab</a>',
    "<math><mtext><table><mglyph><style><img src=x onerror=window.__xss=1>",
    '<details open ontoggle="window.__xss=1">',
    '<input autofocus onfocus="window.__xss=1">',
    '<video><source onerror="window.__xss=1"></video>',
    '<audio src=x onerror="window.__xss=1">',
    '<object data="javascript:window.__xss=1"></object>',
    '<embed src="javascript:window.__xss=1">',
    '<form action="javascript:window.__xss=1"><button>go</button></form>',
    '<meta http-equiv="refresh" content="0;url=javascript:window.__xss=1">',
    '<base href="javascript:window.__xss=1//">',
    '<link rel=import href="data:text/html,<script>window.__xss=1</script>">',
    '"><script>window.__xss=1</script>',
    "'><img src=x onerror=window.__xss=1>",
    "</title><script>window.__xss=1</script>",
    "</textarea><script>window.__xss=1</script>",
    "<style>@import 'javascript:window.__xss=1';</style>",
    '<div style="background:url(javascript:window.__xss=1)">x</div>',
    '<img src="data:image/svg+xml,<svg onload=window.__xss=1>">',
    '<noscript><p title="</noscript><img src=x onerror=window.__xss=1>">',
    "<template><img src=x onerror=window.__xss=1></template>",
    "<select autofocus onfocus=window.__xss=1>",
    "<marquee onstart=window.__xss=1>",
    "<isindex type=image src=1 onerror=window.__xss=1>",
    "<img src=`x`onerror=window.__xss=1>",
    "<scr<script>ipt>window.__xss=1</scr</script>ipt>",
    "<<script>script>window.__xss=1<</script>/script>",
    "{{constructor.constructor('window.__xss=1')()}}",
    "${window.__xss=1}",
    "javascript:window.__xss=1",
    "data:text/html,<script>window.__xss=1</script>",
    "vbscript:msgbox(1)",
    '<a href="&#106;avascript:window.__xss=1">entity</a>',
    '<a href="  javascript:window.__xss=1">spaces</a>',
    '<svg><a xlink:href="javascript:window.__xss=1"><text y=20>x</text></a></svg>',
    "<img src=x:alert(alt) onerror=eval(src) alt=0>",
    "<x onclick=window.__xss=1>click me</x>",
    "<button formaction=javascript:window.__xss=1>b</button>",
    "<keygen autofocus onfocus=window.__xss=1>",
    "<frameset onload=window.__xss=1>",
    '<table background="javascript:window.__xss=1">',
    '<!--<img src="--><img src=x onerror=window.__xss=1//">',
    "<img src=x onerror=&#119;indow.__xss=1>",
    '<script src="data:text/javascript,window.__xss=1"></script>',
]
MARKDOWN_PAYLOADS = [
    "[click](javascript:window.__xss=1)",
    "[click](JAVASCRIPT:window.__xss=1)",
    "[click](data:text/html;base64,PHNjcmlwdD53aW5kb3cuX194c3M9MTwvc2NyaXB0Pg==)",
    "![x](javascript:window.__xss=1)",
    '![x" onerror="window.__xss=1](https://example.invalid/x.png)',
    "<javascript:window.__xss=1>",
    '{% embed url="javascript:window.__xss=1" %}',
    '{% hint style="info\\" onmouseover=\\"window.__xss=1" %}\nhint\n{% endhint %}',
    '{% tabs %}\n{% tab title="<img src=x onerror=window.__xss=1>" %}\nt\n'
    "{% endtab %}\n{% endtabs %}",
    "```html\n<script>window.__xss=1</script>\n```",
    "| <img src=x onerror=window.__xss=1> | b |\n|---|---|\n| c | d |",
    "## <img src=x onerror=window.__xss=1> heading",
]


async def test_xss_payloads_never_run(server: str, db: AsyncEngine, browser: Any) -> None:
    assert len(PAYLOADS) + len(MARKDOWN_PAYLOADS) >= 50
    org, (admin,) = await factories.org_with_members(db)
    body = "\n\n".join(
        [*PAYLOADS, *MARKDOWN_PAYLOADS, *(f"[{p}](https://example.invalid)" for p in PAYLOADS)]
    )
    titles = PAYLOADS[:12]
    async with httpx.AsyncClient(base_url=server, timeout=60) as client:
        s = await build(
            client,
            org,
            admin,
            guide=[("Payloads", body), *((t[:100], f"Titled {i}") for i, t in enumerate(titles))],
        )
        # file names: a page links to files named like payloads (shown as their link text)
        space = s.main_space
        await pages(
            client,
            space,
            admin,
            ("Files", "\n\n".join(f"[{p}](/files/nosuchfile{i})" for i, p in enumerate(PAYLOADS))),
        )
        # the site's, a section's, a group's and a variant's space's titles (the chrome)
        stored = await _store_payloads(client, org, admin, s)
        r = await client.patch(
            s.url, json={"title": "<img src=x onerror=window.__xss=1>"}, headers=admin.headers
        )
        assert r.status_code == 200, r.text
    context = await browser.new_context(viewport=DESKTOP)
    page = await context.new_page()
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    home = f"{server}{s.address}"
    urls = [
        home,
        f"{home}files",
        f"{home}attachments",
        f"{home}{s.v2_path}/",
        f"{home}{s.api_path}/",
    ]
    async with httpx.AsyncClient(base_url=server) as plain:
        for url in urls:
            listing = (await plain.get(url)).text
            assert "<img src=x onerror" not in listing and "<script>window" not in listing, url
            # Custom fields are not shown on published pages at all.
            assert not any(p in listing for p in stored), url
        attachments = (await plain.get(f"{s.address}attachments")).text
    # The file blocks are on the page (a caption holding '"' leaves its line as text).
    quoted = sum('"' in p for p in PAYLOADS[20:30])
    assert attachments.count('class="gitbook-file"') == 10 - quoted
    for url in urls:
        response = await page.goto(url)
        assert response is not None and response.status == 200, url
        assert await page.evaluate("window.__xss") is None, url
    for payload in PAYLOADS:
        await page.goto(f"{home}~search?" + str(httpx.QueryParams({"q": payload})))
        assert await page.evaluate("window.__xss") is None, payload
        # and typed into the box, for the as-you-type results
        await page.fill("#q", payload[:60])
        await page.wait_for_timeout(0)
    for payload in PAYLOADS[:15]:
        await page.goto(home + httpx.URL("/" + payload).raw_path.decode().lstrip("/"))
        assert await page.evaluate("window.__xss") is None, payload
    # every page of the sidebar, titled with payloads
    for href in await page.eval_on_selector_all("nav.tree a", "els => els.map(e => e.href)"):
        await page.goto(href)
        assert await page.evaluate("window.__xss") is None, href
    assert dialogs == []
    await context.close()
    await _custom_host(server, s, admin, dialogs)


async def _store_payloads(client: httpx.AsyncClient, org: str, admin: Any, s: Any) -> list[str]:
    """Payloads in every custom field the API takes (definitions and the main space's values),
    in uploaded files' names and the captions that show them, and in the titles of a section,
    a group and a variant's space. Returns the custom-field strings (no page shows them)."""
    h = admin.headers
    stored: list[str] = []
    for i, (kind, extra) in enumerate(
        (("text", {}), ("tags", {}), ("select:multi", {"options": [p[:40] for p in PAYLOADS[:8]]}))
    ):
        body = {
            "name": f"xss-{i}",
            "type": kind,
            "title": PAYLOADS[i][:100],
            "description": PAYLOADS[i + 3][:200],
            "placeholder": PAYLOADS[i + 6][:100],
            **extra,
        }
        r = await client.post(f"/v1/orgs/{org}/custom-fields", json=body, headers=h)
        assert r.status_code == 201, r.text
        stored += [body["title"], body["description"], body["placeholder"]]
    values = {
        "xss-0": {"value": PAYLOADS[9][:256]},
        "xss-1": {"value": [p[:256] for p in PAYLOADS[10:20]]},
        "xss-2": {"value": [p[:40] for p in PAYLOADS[:8]]},
    }
    r = await client.patch(
        f"/v1/spaces/{s.main_space}/custom-fields", json={"values": values}, headers=h
    )
    assert r.status_code == 204, r.text
    stored += [PAYLOADS[9], *PAYLOADS[10:20]]
    # files named like payloads, shown through file blocks, links and images
    files = [
        {"name": p[:256], "base64": base64.b64encode(b"x").decode(), "contentType": "text/plain"}
        for p in PAYLOADS[20:30]
    ]
    r = await client.post(
        f"/v1/spaces/{s.main_space}/content",
        json={"changes": [{"operation": "insert_files", "files": files}]},
        headers=h,
    )
    assert r.status_code == 200, r.text
    ids = [f["id"] for f in r.json()["insertedFiles"]]
    blocks = [
        f'{{% file src="/files/{fid}" caption="{p}" %}}\n\n[{p}](/files/{fid})\n\n'
        f"![{p}](/files/{fid})"
        for fid, p in zip(ids, PAYLOADS[20:30], strict=True)
    ]
    await pages(client, s.main_space, admin, ("Attachments", "\n\n".join(blocks)))
    sections = (await client.get(f"{s.url}/sections", headers=h)).json()["items"]
    api = next(x for x in sections if x["path"] == s.api_path)
    r = await client.patch(
        f"{s.url}/sections/{api['id']}", json={"title": PAYLOADS[30][:128]}, headers=h
    )
    assert r.status_code == 200, r.text
    groups = (await client.get(f"{s.url}/section-groups", headers=h)).json()["items"]
    r = await client.patch(
        f"{s.url}/section-groups/{groups[0]['id']}", json={"title": PAYLOADS[31][:100]}, headers=h
    )
    assert r.status_code == 200, r.text
    ss = (await client.get(f"{s.url}/site-spaces", headers=h)).json()["items"]
    v2 = next(x for x in ss if x["path"] == s.v2_path)
    r = await client.patch(
        f"/v1/spaces/{v2['space']['id']}", json={"title": PAYLOADS[32][:50]}, headers=h
    )
    assert r.status_code == 200, r.text
    return stored


async def _custom_host(server: str, s: Any, admin: Any, dialogs: list[str]) -> None:
    """The same site at a custom hostname (Chromium resolves it to the test server): its
    pages, payload paths and searches there run nothing, and its links stay on that host."""
    from playwright.async_api import async_playwright

    host = "docs.xss.example"
    async with httpx.AsyncClient(base_url=server) as client:
        r = await client.patch(s.url, json={"hostname": host}, headers=admin.headers)
        assert r.status_code == 200, r.text
    port = server.rpartition(":")[2]
    origin = f"http://{host}:{port}"
    async with async_playwright() as p:
        browser = await p.chromium.launch(
            executable_path=need_chromium(),
            headless=True,
            args=[f"--host-resolver-rules=MAP {host} 127.0.0.1"],
        )
        try:
            page = await browser.new_page()
            page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            await page.goto(f"{origin}/")
            assert await page.inner_text("main h1") != ""
            await page.click("a[rel=next]")
            assert page.url.startswith(f"{origin}/")
            # one page load per group of payloads
            for group in (PAYLOADS[:4], PAYLOADS[4:8], PAYLOADS[8:12]):
                joined = " ".join(group)
                await page.goto(f"{origin}/~search?" + str(httpx.QueryParams({"q": joined})))
                assert await page.evaluate("window.__xss") is None, group
                await page.goto(origin + httpx.URL("/" + "/".join(group)).raw_path.decode())
                assert await page.evaluate("window.__xss") is None, group
            for path in ("/attachments", "/files"):
                await page.goto(f"{origin}{path}")
                assert await page.evaluate("window.__xss") is None, path
                # The site's own links stay on the host it was reached at.
                hrefs = await page.eval_on_selector_all("a[href]", "els => els.map(e => e.href)")
                assert hrefs and not any("127.0.0.1" in h for h in hrefs), hrefs
                assert any(h.startswith(f"{origin}/") for h in hrefs), hrefs
        finally:
            await browser.close()
    assert dialogs == []


async def test_visitor_matrix_with_cookies(server: str, db: AsyncEngine, browser: Any) -> None:
    org, (admin,) = await factories.org_with_members(db)
    async with httpx.AsyncClient(base_url=server, timeout=30) as client:
        shared = await build(client, org, admin, visibility="share-link")
        gated = await build(client, org, admin, visibility="visitor-auth")
        unlisted = await build(client, org, admin, visibility="unlisted")
        hidden = await build(client, org, admin)
        await client.post(f"{hidden.url}/unpublish", headers=admin.headers)
        key = (await client.get(f"{gated.url}/publishing/auth", headers=admin.headers)).json()[
            "privateKey"
        ]
        off = (
            await client.post(
                f"{shared.url}/share-links", json={"name": "Off"}, headers=admin.headers
            )
        ).json()
        await client.patch(
            f"{shared.url}/share-links/{off['id']}", json={"active": False}, headers=admin.headers
        )
    from tests.test_share_links import secret_of

    inactive = secret_of(off)
    now = int(time.time())
    valid = jwt.encode({"exp": now + 600}, key, algorithm="HS256")
    expired = jwt.encode({"exp": now - 3600}, key, algorithm="HS256")
    wrong = jwt.encode({"exp": now + 600}, "another-key-entirely-of-forty-three-chars!", "HS256")

    async def visit(site: Any, query: str = "") -> tuple[int, str, Any]:
        context = await browser.new_context()
        page = await context.new_page()
        response = await page.goto(f"{server}{site.address}{query}")
        assert response is not None
        # a redirect that set a cookie lands on the clean URL; the next page keeps the cookie
        return response.status, await page.inner_text("main h1"), context

    cases = [
        (shared, "", 404),
        (shared, "?shareKey=wrong", 404),
        (shared, f"?shareKey={inactive}", 404),
        (shared, f"?shareKey={shared.share_key}", 200),
        (gated, "", 404),
        (gated, f"?jwt_token={expired}", 404),
        (gated, f"?jwt_token={wrong}", 404),
        (gated, f"?jwt_token={valid}", 200),
        (unlisted, "", 200),
        (hidden, "", 404),
    ]
    for site, query, status in cases:
        got, heading, context = await visit(site, query)
        assert got == status, (site.site["visibility"], query)
        if status == 200:
            assert heading == "Introduction"
            page = context.pages[0]
            assert "shareKey" not in page.url and "jwt_token" not in page.url
            cookies = await context.cookies()
            if query:
                (cookie,) = cookies
                assert cookie["httpOnly"] and cookie["sameSite"] == "Lax"
                assert cookie["path"] == site.address
            await page.click("a[rel=next]")
            assert await page.inner_text("main h1") == "Configuration"
            robots = await page.locator("meta[name=robots]").count()
            assert robots == 1  # none of these sites is public
        await context.close()
