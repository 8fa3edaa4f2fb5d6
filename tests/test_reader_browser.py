"""The published reader in a real browser: Debian's Chromium, headless, driven by Playwright,
against the real server (`docshelf serve`). Navigation through sections, variants, the sidebar
and prev/next; search from the box to a result's anchor; screenshots at desktop and phone widths
(test-artifacts/reader/); XSS payloads that must never run; axe-core on every page type; and the
visitor matrix with the browser's own cookies."""

from __future__ import annotations

import base64
import io
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from docshelf.config import Settings
from docshelf.reader.endpoints import CSP
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

    # A missing page inside the site keeps its chrome: the sidebar leads back into the site.
    await page.goto(f"{home}{s.v2_path}/no-such-page")
    assert await page.inner_text("main h1") == "Page not found"
    await page.screenshot(path=ARTIFACTS / "desktop-not-found.png", full_page=True)
    await page.click("nav.tree >> text=Welcome v2")
    await page.wait_for_url(f"{home}{s.v2_path}/welcome-v2")
    await page.goto(f"{home}no-such-page")
    await page.fill("#q", "zanzibar")
    await page.press("#q", "Enter")
    await page.wait_for_url(f"{home}~search?q=zanzibar")

    # axe-core on each page type in both themes (its script is injected, so these contexts
    # ignore the CSP)
    for scheme in ("light", "dark"):
        checked = await browser.new_context(viewport=DESKTOP, bypass_csp=True, color_scheme=scheme)
        audit = await checked.new_page()
        for kind, url in {
            "page": f"{home}configuration/advanced",
            "section": f"{home}{s.api_path}/",
            "search": f"{home}~search?q=zanzibar",
            "empty search": f"{home}~search?q=nothingmatches",
            "not found": f"{home}no-such-page",
            "no such site": f"{server}/{org}/no-such-site/",
            "refused": f"{home}?shareKey=not-a-key",
        }.items():
            await audit.goto(url)
            assert await _axe(audit) == [], (scheme, kind)
        await audit.goto(f"{home}configuration/advanced")
        await audit.screenshot(path=ARTIFACTS / f"desktop-page-{scheme}.png", full_page=True)
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


# Code in the languages docs show most, with the tokens themes colour least legibly (comments,
# decorators, doc strings, diff lines), a block of an unknown language and one of none.
CODE_BLOCKS = {
    "python": "# A comment\n@decorator\ndef handler(event: dict) -> str | None:\n"
    '    """Docstring of the handler."""\n'
    "    return f\"value {event['id']:>4}\" if event and not False else None  # trailing\n",
    "javascript": '// comment\nconst answer = await fetch(`/api/${id}`, { method: "POST" });'
    " /* block */\nexport default class Widget extends Base { static count = 42; }\n",
    "bash": '#!/bin/sh\nexport NAME="docs" && echo "$NAME" | grep -v \'^#\' > out.txt\n',
    "json": '{"name": "docshelf", "version": 1.5, "ok": true, "none": null}\n',
    "yaml": '# settings\nserver:\n  port: 8080\n  hosts: [a.example, "b.example"]\n',
    "html": '<!-- note -->\n<a href="/x" class="y">Link &amp; text</a>\n',
    "diff": "--- a/file\n+++ b/file\n@@ -1,2 +1,2 @@\n-removed line\n+added line\n context\n",
    "sql": "SELECT id, title FROM pages WHERE id = 'x' ORDER BY 1; -- note\n",
    "nolang": "words of an unknown language\n",
    "": "plain text without a language\n",
}
LANGUAGE_LABELS = [
    "Python", "JavaScript", "Bash", "JSON", "YAML", "HTML", "Diff", "SQL", "nolang",
]  # fmt: skip
HINT_STYLES = ("info", "success", "warning", "danger")
CODE_PAGE = "\n".join(
    [
        *(f"```{language}\n{code}```\n" for language, code in CODE_BLOCKS.items()),
        *(
            f'{{% hint style="{style}" %}}\nA {style} hint with `code` and a [link](https://x.org).'
            "\n{% endhint %}\n"
            for style in HINT_STYLES
        ),
    ]
)


def _luminance(rgb: tuple[int, ...]) -> float:
    def channel(c: int) -> float:
        v = c / 255
        return v / 12.92 if v <= 0.04045 else ((v + 0.055) / 1.055) ** 2.4

    r, g, b = (channel(c) for c in rgb[:3])
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def _contrast(a: tuple[int, ...], b: tuple[int, ...]) -> float:
    light, dark = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


def _ink(image: Any, box: tuple[float, float, float, float], scale: float) -> float:
    """The contrast of what is drawn in `box` (CSS pixels) of an element's screenshot: its
    background is the colour most of the box shows, and its ink the pixel farthest from that
    (at twice the CSS resolution a glyph's strokes cover whole pixels, so that pixel is the
    text's own colour, whatever filters or blending the page applied)."""
    x, y, w, h = box
    crop = image.crop(
        (int(x * scale), int(y * scale), int((x + w) * scale + 0.5), int((y + h) * scale + 0.5))
    )
    colours = crop.getcolors(maxcolors=crop.width * crop.height)
    background = max(colours)[1]
    return max(_contrast(colour, background) for _, colour in colours)


# The boxes of a code block's words (CSS pixels from the block's corner, cut to what the
# block shows: a long line scrolls), what each says.
_WORD_BOXES = """pre => {
  const box = pre.getBoundingClientRect();
  const out = [];
  const walker = document.createTreeWalker(pre, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    if (!/[A-Za-z0-9]{2,}/.test(node.data)) continue;
    const range = document.createRange();
    range.selectNodeContents(node);
    for (const r of range.getClientRects()) {
      const right = Math.min(r.right, box.left + pre.clientWidth);
      if (right - r.left < 8) continue;
      out.push([node.data.trim(), r.left - box.left, r.top - box.top, right - r.left, r.height]);
    }
  }
  return out;
}"""


async def test_code_and_hints_are_readable_in_both_themes(
    server: str, db: AsyncEngine, browser: Any
) -> None:
    """Every word of every code block stands out from its background at WCAG AA (4.5:1) in
    the light and the dark theme, as drawn (pixels, so a filter cannot hide a failure); code
    blocks show their language, hints an icon of their style (3:1 against the hint, the
    contrast WCAG asks of meaningful graphics) and a label for screen readers."""
    from PIL import Image

    org, (admin,) = await factories.org_with_members(db)
    async with httpx.AsyncClient(base_url=server, timeout=30) as client:
        s = await build(client, org, admin, guide=[("Code", CODE_PAGE), ("Next", "n")])
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    fetched: dict[str, int] = {}
    for scheme in ("light", "dark"):
        context = await browser.new_context(
            viewport=DESKTOP, color_scheme=scheme, device_scale_factor=2
        )
        page = await context.new_page()
        fetched.clear()
        page.on("response", lambda r: fetched.__setitem__(r.url, r.status))
        await page.goto(f"{server}{s.address}")
        await page.screenshot(path=ARTIFACTS / f"code-{scheme}.png", full_page=True)
        blocks = page.locator(".body pre")
        assert await blocks.count() == len(CODE_BLOCKS)
        weak: list[tuple[float, str]] = []
        measured = 0
        for block in await blocks.all():
            image = Image.open(io.BytesIO(await block.screenshot())).convert("RGB")
            scale = image.width / (await block.bounding_box())["width"]
            for text, *box in await block.evaluate(_WORD_BOXES):
                measured += 1
                ratio = _ink(image, tuple(box), scale)
                if ratio < 4.5:
                    weak.append((round(ratio, 2), text))
        assert measured > 60
        assert weak == [], (scheme, sorted(weak))
        # The language of each block that names one, as written when Pygments knows none.
        labels = await page.locator(".code-block .code-language").all_inner_texts()
        assert labels == LANGUAGE_LABELS
        # Hints: an icon per style, drawn from this server's own files.
        icons: set[str] = set()
        for style in HINT_STYLES:
            hint = page.locator(f".hint-{style}")
            assert await hint.locator(".hint-label").text_content() == style.capitalize()
            label = await hint.locator(".hint-label").bounding_box()
            assert label is not None and label["width"] <= 1 and label["height"] <= 1
            mask = await hint.evaluate(
                "el => getComputedStyle(el, '::before').maskImage"
                " || getComputedStyle(el, '::before').webkitMaskImage"
            )
            assert mask.startswith(f'url("{server}/~reader/static/hint-{style}.'), mask
            icons.add(mask)
            assert fetched.get(mask[5:-2]) == 200, (mask, fetched)
            image = Image.open(io.BytesIO(await hint.screenshot())).convert("RGB")
            scale = image.width / (await hint.bounding_box())["width"]
            height = image.height / scale
            # the icon sits in the hint's left margin, left of the text
            assert _ink(image, (6, 0, 30, height), scale) >= 3, (scheme, style)
        assert len(icons) == len(HINT_STYLES)
        await context.close()


_CSP_WATCH = (
    "window.__csp = []; document.addEventListener('securitypolicyviolation',"
    " e => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI));"
)


async def test_copy_buttons_work_under_the_csp(server: str, db: AsyncEngine, browser: Any) -> None:
    """Each code block has a copy button that puts the block's text on the clipboard, through
    the Clipboard API on a secure origin and through a selection on a plain http one (a site's
    custom hostname here); the reader's own CSP is enforced and nothing comes from elsewhere."""
    from playwright.async_api import async_playwright

    org, (admin,) = await factories.org_with_members(db)
    async with httpx.AsyncClient(base_url=server, timeout=30) as client:
        s = await build(client, org, admin, guide=[("Code", CODE_PAGE), ("Next", "n")])
        host = "docs.copy.example"
        r = await client.patch(s.url, json={"hostname": host}, headers=admin.headers)
        assert r.status_code == 200, r.text
    python, plain = CODE_BLOCKS["python"], CODE_BLOCKS[""]
    async with async_playwright() as p:
        launched = await p.chromium.launch(
            executable_path=need_chromium(),
            headless=True,
            args=[f"--host-resolver-rules=MAP {host} 127.0.0.1"],
        )
        try:
            context = await launched.new_context(
                viewport=DESKTOP, permissions=["clipboard-read", "clipboard-write"]
            )
            await context.add_init_script(_CSP_WATCH)
            page = await context.new_page()
            asked: list[str] = []
            errors: list[str] = []
            page.on("request", lambda r: asked.append(r.url))
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            response = await page.goto(f"{server}{s.address}")
            assert response is not None and response.headers["content-security-policy"] == CSP
            # No inline script: the page's only script is this server's file.
            scripts = await page.eval_on_selector_all(
                "script", "els => els.map(e => [e.src, e.textContent.trim()])"
            )
            assert [(src.rsplit(".", 2)[0], text) for src, text in scripts] == [
                (f"{server}/~reader/static/reader", "")
            ]
            buttons = page.locator(".code-block button.copy")
            assert await buttons.count() == len(CODE_BLOCKS)
            assert await page.evaluate("window.isSecureContext")
            for index, code in ((0, python), (len(CODE_BLOCKS) - 1, plain)):
                button = buttons.nth(index)
                assert await button.inner_text() == "Copy"
                await button.click()
                await page.wait_for_function(
                    "b => b.textContent === 'Copied'", arg=await button.element_handle()
                )
                assert await page.evaluate("navigator.clipboard.readText()") == code[:-1]
                assert await page.locator("body > [role=status]").inner_text() == (
                    "Code copied to the clipboard"
                )
            await page.screenshot(path=ARTIFACTS / "code-copied.png")
            assert await page.evaluate("window.__csp") == []
            assert all(url.startswith(f"{server}/") for url in asked), asked
            # The site at its custom hostname over plain http: no Clipboard API there.
            port = server.rpartition(":")[2]
            custom = await context.new_page()
            custom.on("pageerror", lambda exc: errors.append(str(exc)))
            await custom.goto(f"http://{host}:{port}/")
            assert not await custom.evaluate("window.isSecureContext")
            button = custom.locator(".code-block button.copy").nth(1)
            await button.click()
            await custom.wait_for_function(
                "b => b.textContent === 'Copied'", arg=await button.element_handle()
            )
            assert await custom.evaluate("window.__csp") == []
            # read back where the Clipboard API may read it
            javascript = CODE_BLOCKS["javascript"][:-1]
            assert await page.evaluate("navigator.clipboard.readText()") == javascript
            assert errors == []
        finally:
            await launched.close()
