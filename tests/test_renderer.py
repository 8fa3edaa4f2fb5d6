"""GitBook's own open-source renderer (GitbookIO/gitbook, the application that serves GitBook's
docs sites) serving a Docshelf site, unchanged: built and started by `scripts/renderer.sh`
beside `docshelf serve`, and read as a reverse proxy in front of it would (`X-GitBook-URL`).
What it renders is compared with what was written: text present, the image loading, links and
search results leading to the right page; Chromium takes two screenshots.

It needs the pinned snapshot in ../shared/gitbook-renderer/ (beside the checkout): a user's
clone has none, so there the test says so and skips; under CI it must run."""

from __future__ import annotations

import asyncio
import fcntl
import os
import re
import signal
import subprocess
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from html import unescape
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import httpx
import jwt
import pytest

from tests import renderer_site
from tests.browser import chromium
from tests.test_journeys import ROOT, Product, _free_port, _postgres, start_product

SNAPSHOTS = ROOT.parent / "shared" / "gitbook-renderer"
# The renderer refuses site hosts with a port: published sites get a public URL without one,
# which the renderer only hands back to Docshelf's look-up.
PUBLIC = "https://docs.example.test"
ARTIFACTS = ROOT / "test-artifacts" / "renderer"
CACHE = Path(os.environ.get("DOCSHELF_CACHE_DIR", ROOT / ".cache"))


def _snapshot() -> Path:
    found = sorted(SNAPSHOTS.glob("gitbook-*.tgz"))
    if not found:
        message = f"GitBook's renderer snapshot is not in {SNAPSHOTS} (a clone without ../shared)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return found[0]


@dataclass
class Served:
    product: Product
    renderer: str
    site: renderer_site.Built

    def address(self, site: renderer_site.Site, rest: str = "") -> str:
        return f"/{self.site.org}/{site.id}" + (f"/{rest}" if rest else "")


class _Links(HTMLParser):
    """The anchors and images of a page, as (text, href) and (alt, src)."""

    def __init__(self) -> None:
        super().__init__()
        self.links: list[tuple[str, str]] = []
        self.images: list[tuple[str, str]] = []
        self._open: list[tuple[str, list[str]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "a" and found.get("href"):
            self._open.append((found["href"] or "", []))
        if tag == "img" and found.get("src"):
            self.images.append((found.get("alt") or "", found["src"] or ""))

    def handle_data(self, data: str) -> None:
        for _, texts in self._open:
            texts.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "a" and self._open:
            href, texts = self._open.pop()
            self.links.append((" ".join("".join(texts).split()), href))


def _text(html: str) -> str:
    html = re.sub(r"<(script|style)\b.*?</\1>", " ", html, flags=re.S)
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", html)).split())


def _parsed(html: str) -> _Links:
    parser = _Links()
    parser.feed(html)
    return parser


def _start_renderer(api: str, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    with log.open("wb") as out:
        process = subprocess.Popen(
            [str(ROOT / "scripts" / "renderer.sh"), "start", api, str(port), str(_snapshot())],
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    base = f"http://localhost:{port}"
    deadline = time.monotonic() + 180
    while True:
        try:
            httpx.get(f"{base}/~gitbook/static/icons/svgs/regular/check.svg", timeout=5)
            return process, base
        except httpx.TransportError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            pytest.fail("the renderer did not start:\n" + log.read_text(errors="replace")[-4000:])
        time.sleep(0.5)


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


@contextmanager
def _taking_turns() -> Iterator[None]:
    """The two test passes run side by side and share the build: one renderer at a time serves
    from it (its runtime cache lives in the build's directory)."""
    CACHE.mkdir(parents=True, exist_ok=True)
    with (CACHE / "gitbook-renderer.serving.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    snapshot = _snapshot()
    with _taking_turns():
        yield from _serve(tmp_path_factory, snapshot)


def _serve(tmp_path_factory: pytest.TempPathFactory, snapshot: Path) -> Iterator[Served]:
    root = tmp_path_factory.mktemp("renderer")
    # Built once per snapshot and cached (~5 minutes on two cores the first time).
    done = subprocess.run(
        [str(ROOT / "scripts" / "renderer.sh"), "build", str(snapshot)],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    url = os.environ.get("DOCSHELF_TEST_DATABASE_URL")
    name = f"renderer_{uuid.uuid4().hex[:8]}"
    product = start_product(
        root, _postgres(url, name, create=True) if url else None, DOCSHELF_PUBLIC_URL=PUBLIC
    )
    renderer: subprocess.Popen[bytes] | None = None
    try:

        async def make() -> renderer_site.Built:
            async with product.client(product.token) as c:
                return await renderer_site.build(c)

        with ThreadPoolExecutor(1) as pool:
            built = pool.submit(asyncio.run, make()).result()
        renderer, base = _start_renderer(product.base, root / "renderer.log")
        yield Served(product, base, built)
    finally:
        if renderer is not None:
            _stop(renderer)
        product.stop()
        if url:
            _postgres(url, name, create=False)


async def _read(
    s: Served, path: str, *, cookies: dict[str, str] | None = None, status: int = 200
) -> str:
    async with httpx.AsyncClient(base_url=s.renderer, timeout=300, cookies=cookies) as c:
        r = await c.get(path, headers={"X-GitBook-URL": PUBLIC + path})
    assert r.status_code == status, (path, r.status_code, r.text[-2000:])
    return r.text


async def test_pages_through_the_renderer(served: Served) -> None:
    s, b = served, served.site
    first = await _read(s, s.address(b.handbook))
    text = _text(first)
    for shown in (
        "Docshelf serves this handbook to GitBook's renderer.",
        "Hints keep their style: this one is informative.",
    ):
        assert shown in text, shown
    # The code block, its tokens highlighted apart.
    assert 'defgreet(name:str)->str:returnf"Hello,{name}"' in "".join(text.split())
    # The navigation holds the pages in order, the second section's tab included.
    for title in ("Welcome", "Getting started", "Diagrams", "Shared notes", "API"):
        assert title in text
    # The link written in the page leads to the nested page, which shows its tabs.
    links = dict(_parsed(first).links)
    install = links["Install"]
    assert install == s.address(b.handbook, "getting-started/install"), install
    text = _text(await _read(s, install))
    for shown in ("Choose your system.", "Debian", "macOS", "Run brew install docshelf-example."):
        assert shown in text, shown
    # A page of the second section, not the first's.
    text = _text(await _read(s, s.address(b.handbook, "api")))
    assert "The second section documents the endpoints." in text
    assert "Docshelf serves this handbook" not in text
    # The reusable content, shown where the page includes it.
    text = _text(await _read(s, s.address(b.handbook, "shared-notes")))
    assert renderer_site.NOTICE.strip() in text
    # The image: its address is Docshelf's download link, which serves the uploaded bytes.
    page = _parsed(await _read(s, s.address(b.handbook, "diagrams")))
    (src,) = [src for alt, src in page.images if alt == "The architecture"]
    assert src.startswith(f"{s.product.base}/v1/downloads/"), src
    async with httpx.AsyncClient() as c:
        r = await c.get(src)
    assert r.status_code == 200 and r.content == renderer_site.png("teal")
    # A path that names no page is the renderer's own 404, not another page.
    missing = await _read(s, s.address(b.handbook, "no-such-page"), status=404)
    assert "Docshelf serves this handbook" not in _text(missing)


async def test_share_link_and_visitor_sites(served: Served) -> None:
    s, b = served, served.site
    text = _text(await _read(s, f"{s.address(b.partners)}/{b.share_key}"))
    assert "Only partners with the link read this." in text
    refused = await _read(s, s.address(b.partners), status=404)
    assert "Only partners" not in _text(refused)
    # A visitor-auth site: the renderer takes the signed token from `jwt_token` once, keeps it
    # in a cookie and sends it to Docshelf's look-up on every page.
    token = jwt.encode({"exp": int(time.time()) + 3600}, b.visitor_key, algorithm="HS256")
    portal = s.address(b.portal)
    async with httpx.AsyncClient(base_url=s.renderer, timeout=300) as c:
        r = await c.get(
            f"{portal}?jwt_token={token}", headers={"X-GitBook-URL": f"{PUBLIC}{portal}"}
        )
    assert r.status_code == 307, r.text
    cookies = dict(r.cookies)
    assert cookies, r.headers
    text = _text(await _read(s, portal, cookies=cookies))
    assert "Signed-in customers read this." in text
    refused = await _read(s, portal, status=404)
    assert "Signed-in customers" not in _text(refused)


async def test_search_through_the_renderer(served: Served) -> None:
    s, b = served, served.site
    path = s.address(b.handbook, "~gitbook/search")
    async with httpx.AsyncClient(base_url=s.renderer, timeout=300) as c:
        r = await c.post(
            path,
            json={"query": "brew", "scope": {"mode": "all"}},
            headers={"X-GitBook-URL": PUBLIC + path},
        )
    assert r.status_code == 200, r.text
    results: list[dict[str, Any]] = r.json()
    assert [(x["type"], x["title"]) for x in results] == [("page", "Install")], results
    assert results[0]["pageId"] == b.handbook.pages["Install"]
    text = _text(await _read(s, results[0]["href"]))
    assert "Run brew install docshelf-example." in text


async def _image_loaded(
    page: Any, selector: str, s: Served, seen: list[str], *, width: int
) -> None:
    """The image is in the page and its bytes arrived: its natural width is the uploaded PNG's.
    Waited for as long as a loaded machine may take (the image is lazy and fetched from
    Docshelf through the renderer); when it never arrives, the message says what the page
    held and what Docshelf answered for its address."""
    image = page.locator(selector).first
    try:
        await image.wait_for(state="attached", timeout=60_000)
        await image.scroll_into_view_if_needed(timeout=60_000)
        await page.wait_for_function(
            "img => img.complete && img.naturalWidth > 0",
            arg=await image.element_handle(),
            timeout=90_000,
        )
    except Exception as exc:
        await page.screenshot(path=str(ARTIFACTS / "image-failed.png"), full_page=True)
        html = await page.content()
        found = [src for alt, src in _parsed(html).images if selector.endswith(f'"{alt}"]')]
        answers = []
        async with httpx.AsyncClient(timeout=60) as c:
            for src in found:
                r = await c.get(src if src.startswith("http") else s.renderer + src)
                answers.append((src, r.status_code, r.headers.get("content-type")))
        raise AssertionError(
            f"{selector} did not load: {exc}; in the page: {answers or 'no such image'}; "
            f"errors, console and failed requests: {seen}"
        ) from exc
    assert await image.evaluate("img => img.naturalWidth") == width


async def test_two_pages_in_chromium(served: Served) -> None:
    s, b = served, served.site
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    async with chromium() as browser:
        for name, rest in (("diagrams", "diagrams"), ("install", "getting-started/install")):
            path = s.address(b.handbook, rest)
            page = await browser.new_page(viewport={"width": 1280, "height": 900})
            errors: list[str] = []
            failed: list[str] = []
            page.on("pageerror", lambda error, seen=errors: seen.append(str(error)))
            page.on(
                "console",
                lambda m, seen=failed: m.type == "error" and seen.append(f"console: {m.text}"),
            )
            page.on(
                "requestfailed",
                lambda request, seen=failed: seen.append(f"{request.url}: {request.failure}"),
            )
            await page.set_extra_http_headers({"X-GitBook-URL": PUBLIC + path})
            response = await page.goto(s.renderer + path, wait_until="networkidle")
            assert response is not None and response.status == 200, path
            if name == "diagrams":
                await _image_loaded(
                    page, 'img[alt="The architecture"]', s, errors + failed, width=48
                )
            else:
                assert "Run apt-get install docshelf-example." in await page.inner_text("main")
            await page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)
            # Hydrated without an error: the page is the application, not its error screen.
            assert errors == [], errors
            assert "Application error" not in await page.inner_text("body")
            await page.close()
