"""The reader's HTTP side: an ASGI layer in front of the API that answers GET/HEAD requests under
the published address (DOCSHELF_PUBLIC_URL's path) which no API route matches. It is no FastAPI
route on purpose: /v1's route tables, OpenAPI document and JSON errors stay exactly the API's.

Every answer carries the same safety headers: a Content-Security-Policy allowing scripts and
styles from this server only (no inline script), nosniff, a Referrer-Policy and frame refusal.
Templates are Jinja2 with autoescaping; the only unescaped HTML is the page body, which
document/html.py has already sanitised with nh3."""

from __future__ import annotations

import functools
import hashlib
import re
from dataclasses import dataclass
from importlib import resources
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlsplit

import orjson
from sqlalchemy.ext.asyncio import AsyncConnection
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Match
from starlette.types import ASGIApp, Receive, Scope, Send

from docshelf.kit.db import unit_of_work
from docshelf.reader import service
from docshelf.reader.service import Answer
from docshelf.site import published
from docshelf.site.presenter import site_origin

if TYPE_CHECKING:
    from jinja2 import Environment

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; "
    # nh3 keeps one style property, text-align, on table cells.
    "style-src-attr 'unsafe-inline'; img-src 'self' https:; connect-src 'self'; "
    "font-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)
SAFETY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "strict-origin-when-cross-origin",
    "X-Frame-Options": "DENY",
}
STATIC = "~reader/static"
_ICON_URL = re.compile(r'url\("([\w-]+\.svg)"\)')
_YEAR = "public, max-age=31536000, immutable"


@dataclass(frozen=True)
class Asset:
    name: str
    data: bytes
    media_type: str
    fingerprinted: str  # name with the content's hash, what pages link to


def _asset(name: str, data: bytes, media_type: str) -> Asset:
    digest = hashlib.sha256(data).hexdigest()[:12]
    stem, _, ext = name.rpartition(".")
    return Asset(name, data, media_type, f"{stem}.{digest}.{ext}")


def _assets() -> dict[str, Asset]:
    from docshelf.document.html import DARK_CODE_STYLE, code_stylesheet

    folder = resources.files("docshelf.reader") / "static"
    icons = [
        _asset(entry.name, entry.read_bytes(), "image/svg+xml")
        for entry in folder.iterdir()
        if entry.name.endswith(".svg")
    ]
    fingerprinted = {icon.name: icon.fingerprinted for icon in icons}
    # The stylesheet names the icons relative to itself, so the same text serves every
    # address (a path prefix, a custom host); a missing icon fails here, not in a browser.
    css = _ICON_URL.sub(
        lambda m: f'url("{fingerprinted[m[1]]}")', (folder / "reader.css").read_text()
    )
    css += code_stylesheet()
    css += "@media (prefers-color-scheme: dark) {\n" + code_stylesheet(DARK_CODE_STYLE) + "}\n"
    out = [
        _asset("reader.css", css.encode(), "text/css; charset=utf-8"),
        _asset("reader.js", (folder / "reader.js").read_bytes(), "text/javascript; charset=utf-8"),
        *icons,
    ]
    return {asset.fingerprinted: asset for asset in out}


# The assets (with Pygments' stylesheet) and the templates (Jinja2) are made on the first
# published page served, not in every API process that never serves one (~6 MB).
@functools.cache
def assets() -> dict[str, Asset]:
    return _assets()


@functools.cache
def _environment() -> Environment:
    from jinja2 import Environment, PackageLoader, select_autoescape

    return Environment(
        loader=PackageLoader("docshelf.reader", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )


def _render(template: str, context: dict[str, Any], prefix: str) -> bytes:
    urls = {a.name: f"{prefix}/{STATIC}/{a.fingerprinted}" for a in assets().values()}
    return _environment().get_template(template).render(**context, assets=urls).encode()


def _response(answer: Answer, prefix: str, secure: bool, head: bool) -> Response:
    body = answer.body
    if answer.template is not None:
        body = _render(answer.template, answer.context or {}, prefix)
        if answer.cache_key is not None:
            service.keep_page(answer.cache_key, body)
    headers = {**SAFETY_HEADERS, **(answer.headers or {})}
    if answer.status == 304:
        return Response(status_code=304, headers=headers)
    response = Response(
        content=b"" if head else (body or b""),
        status_code=answer.status,
        headers=headers,
        media_type=answer.media_type,
    )
    if head and body:
        response.headers["content-length"] = str(len(body))
    for name, value, path in answer.set_cookies or []:
        response.set_cookie(
            name, value, path=path, httponly=True, samesite="lax", secure=secure, max_age=86400
        )
    return response


async def _static(name: str, prefix: str, head: bool) -> Response:
    asset = assets().get(name)
    if asset is None:
        return _response(_not_found(), prefix, False, head)
    return Response(
        content=b"" if head else asset.data,
        media_type=asset.media_type,
        headers={**SAFETY_HEADERS, "Cache-Control": _YEAR},
    )


def _not_found() -> Answer:
    return Answer(status=404, template="not_found.html", context={"title": "Page not found"})


async def handle(request: Request, prefix: str, public: str) -> Response:
    """A request at a path-addressed site: <prefix>/<organization>/<site>/..."""
    head = request.method == "HEAD"
    secure = urlsplit(public).scheme == "https"
    rest = request.url.path[len(prefix) :]
    if rest.startswith(f"/{STATIC}/"):
        return await _static(rest[len(STATIC) + 2 :], prefix, head)
    segments = rest.split("/")
    # ["", org, site, ...]: a site's address always ends in "/" after its basename.
    if len(segments) < 3 or not segments[1] or not segments[2]:
        return _response(_not_found(), prefix, secure, head)
    site_base = f"{prefix}/{segments[1]}/{segments[2]}/"
    origin = "{0.scheme}://{0.netloc}".format(urlsplit(public))
    async with unit_of_work(request.app.state.engine, write=False) as conn:
        answer = await _answer(
            request, conn, public, origin, site_base, "/".join(segments[3:]), None
        )
    return _response(answer, prefix, secure, head)


async def handle_custom_host(request: Request, hostname: str, public: str) -> Response | None:
    """A request whose Host header names a site's custom hostname: the site at the root. None
    if no site has that hostname (the request then goes on as if it had come to any host).
    Every address the pages hold is a path, or built from the stored hostname: never from the
    header itself."""
    head = request.method == "HEAD"
    secure = urlsplit(public).scheme == "https"
    path = request.url.path
    async with unit_of_work(request.app.state.engine, write=False) as conn:
        current = await published.load(conn, hostname=hostname)
        if current is None:
            return None
        if path.startswith(f"/{STATIC}/"):
            return await _static(path[len(STATIC) + 2 :], "", head)
        origin = site_origin(current.site, public)
        assert origin is not None  # found by its hostname
        answer = await _answer(request, conn, public, origin, "/", path.lstrip("/"), current)
    return _response(answer, "", secure, head)


async def _answer(
    request: Request,
    conn: AsyncConnection,
    public: str,
    origin: str,
    site_base: str,
    tail: str,
    current: published.Current | None,
) -> Answer:
    """What the site at `origin` + `site_base` answers for `tail` (the path below it)."""
    state = request.app.state
    site_url = f"{origin}{site_base}"
    query = dict(parse_qsl(request.url.query, keep_blank_values=True))
    cookies = dict(request.cookies)
    common: dict[str, Any] = {"base_url": state.base_url, "public": public, "loaded": current}
    answer: Answer
    if tail in ("robots.txt", "sitemap.xml"):
        answer = await service.site_meta(
            conn, url=site_url, kind=tail, cookies=cookies, site_base=site_base, **common
        )
    elif tail in ("~search", "~search.json"):
        found = await service.search(conn, url=site_url, query=query, cookies=cookies, **common)
        if isinstance(found, Answer):
            answer = found
        elif tail == "~search.json":
            answer = Answer(
                status=200,
                body=orjson.dumps({"results": found[1]}),
                media_type="application/json",
                headers={"Cache-Control": "private, no-store"},
            )
        else:
            answer = found[0]
    elif "/~files/" in f"/{tail}":
        before, _, file_id = f"/{tail}".rpartition("/~files/")
        answer = await service.site_file(
            conn,
            state.blobs,
            url=f"{site_url}{before.lstrip('/')}",
            file_id=file_id,
            cookies=cookies,
            **common,
        )
    else:
        answer = await service.page(
            conn,
            url=f"{site_url}{tail}" + (f"?{request.url.query}" if request.url.query else ""),
            query=query,
            cookies=cookies,
            if_none_match=request.headers.get("if-none-match"),
            site_base=site_base,
            **common,
        )
    if answer.status == 404 and answer.template is not None:
        answer.context = {**(answer.context or {}), "site_base": site_base}
    return answer


def custom_host(scope: Scope, public: str, base_url: str) -> str | None:
    """The Host header's name if it could be a site's custom hostname: not this server's own
    address, and shaped like GitBook's `SiteHostname` (so a hostile header costs no look-up)."""
    raw = next((v for k, v in scope["headers"] if k == b"host"), None)
    if raw is None:
        return None
    host = raw.decode("latin-1").lower()
    name, _, port = host.rpartition(":")
    if name and port.isdigit():
        host = name
    if host in _own_hosts(public, base_url):
        return None
    return host if published.is_hostname(host) else None


@functools.cache
def _own_hosts(public: str, base_url: str) -> tuple[str | None, str | None]:
    # Settings of the process: parsed once, not on every GET.
    return urlsplit(public).hostname, urlsplit(base_url).hostname


class ReaderMiddleware:
    """Hands the reader what the API would have answered 404 to: GET and HEAD under the
    published address, outside /v1, matching no API route."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self._outside_v1: list[Any] | None = None

    def _api_routes(self, scope: Scope) -> list[Any]:
        """The API's routes outside /v1 (the docs pages, downloads...), found once: /v1 paths
        never reach the reader, so only these can claim a published-looking path."""
        if self._outside_v1 is None:
            self._outside_v1 = [
                route
                for route in scope["app"].router.routes
                if not str(getattr(route, "path", "")).startswith("/v1/")
                # Routers included under /v1 (FastAPI keeps them whole, with their prefix).
                and getattr(getattr(route, "include_context", None), "prefix", "") != "/v1"
            ]
        return self._outside_v1

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in ("GET", "HEAD"):
            await self.app(scope, receive, send)
            return
        path: str = scope["path"]
        if path == "/v1" or path.startswith("/v1/"):
            await self.app(scope, receive, send)
            return
        state = scope["app"].state
        public: str = state.settings.resolved_public_url
        prefix = urlsplit(public).path.rstrip("/")
        hostname = custom_host(scope, public, state.base_url)
        if hostname is not None:
            # A site's own host: the reader answers every GET outside /v1 (a page may be
            # called "docs"); an unknown host goes on as any other request.
            answered = await handle_custom_host(Request(scope, receive), hostname, public)
            if answered is not None:
                await answered(scope, receive, send)
                return
        if not path.startswith(f"{prefix}/") or any(
            route.matches(scope)[0] != Match.NONE for route in self._api_routes(scope)
        ):
            await self.app(scope, receive, send)
            return
        response = await handle(Request(scope, receive), prefix, public)
        await response(scope, receive, send)
