"""What one request to a published site answers. Every access decision is the sites package's:
`site.published.resolve` says whether the visitor may see the URL and what it shows, and
`site.published.open_for_visitor` gives the structure (sections, variants) this visitor sees.
Nothing here decides visibility on its own; it only shapes what those answers allow.

Visitors bring a share link's key (`?shareKey=`) or a visitor token (`?jwt_token=`) once: the
reader keeps it in an HttpOnly, SameSite=Lax cookie scoped to the site's path and redirects to
the same URL without it, so the secret leaves the address bar, the history and Referer headers.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from email.utils import format_datetime
from typing import Any
from urllib.parse import urlencode, urlsplit

from sqlalchemy.ext.asyncio import AsyncConnection

from docshelf.config import Settings
from docshelf.content import repository as content_repository
from docshelf.content.downloads import served_type
from docshelf.content.reusable import includes as reusable
from docshelf.kit.lru import SizedLRU
from docshelf.reader import render
from docshelf.search import engine as search_engine
from docshelf.site import nav as navs
from docshelf.site import published
from docshelf.site.conditions import shows
from docshelf.site.nav import Nav, NavPage
from docshelf.site.presenter import Row
from docshelf.site.published import DEFAULT_CUSTOMIZATION, Opened, Visitor
from docshelf.sso import login as sso_login

# Bump when the HTML the reader writes changes, so ETags of kept pages change with it.
VERSION = "2"
SHARE_COOKIE = "docshelf_share"
VISITOR_COOKIE = "docshelf_visitor"
SEARCH_LIMIT = 20
MAX_QUERY = 256
# Whole answers, bounded by their bytes: a page carries its site's whole navigation, so a count
# alone (2,048 before) let a large site's pages hold hundreds of MB.
_pages: SizedLRU[str, bytes] = SizedLRU(Settings().reader_cache_mb * 1024 * 1024, len)


@dataclass
class Answer:
    """What the endpoint turns into a response."""

    status: int
    template: str | None = None
    context: dict[str, Any] | None = None
    headers: dict[str, str] | None = None
    body: bytes | None = None
    media_type: str = "text/html; charset=utf-8"
    set_cookies: list[tuple[str, str, str]] | None = None  # (name, value, path)
    etag: str | None = None
    cache_key: str | None = None


@dataclass
class Place:
    """A resolved URL: the lookup's answer and the structure the visitor sees."""

    lookup: dict[str, Any]
    opened: Opened
    site: Row
    nav: Nav
    section: Row | None
    site_space: Row


def _visitor(query: dict[str, str], cookies: dict[str, str]) -> tuple[Visitor, bool]:
    """The visitor's key and token (the URL's first, then the cookies'), and whether the URL
    brought one (to be moved into a cookie)."""
    share = query.get("shareKey")
    token = query.get("jwt_token")
    from_url = bool(share or token)
    return (
        Visitor(
            share_key=share or cookies.get(SHARE_COOKIE) or None,
            token=token or cookies.get(VISITOR_COOKIE) or None,
        ),
        from_url,
    )


async def _place(
    conn: AsyncConnection,
    url: str,
    who: Visitor,
    base_url: str,
    public: str,
    cookies: dict[str, str] | None = None,
    loaded: published.Current | None = None,
) -> Place | published.Lookup | None:
    # A member signed in through their organization's SSO reads the site as the API shows it
    # to them; the session counts only on the sites of the organization that opened it.
    session = (cookies or {}).get(sso_login.COOKIE)

    async def member(org_id: str) -> str | None:
        return await sso_login.session_user(conn, session, org_id)

    lookup = await published.resolve(
        conn,
        url,
        who,
        base_url=base_url,
        public=public,
        redirect_on_error=True,
        member=member if session else None,
        current=loaded,
    )
    if lookup is None or "redirect" in lookup.body:
        return lookup
    body = lookup.body
    opened = lookup.opened
    assert opened is not None  # resolve gives the structure with every lookup that is no redirect
    site = opened.view.site
    nav = await navs.load(conn, body["space"], body["revision"])
    if nav is None:
        return None
    section = next((s for s in opened.view.sections if s["id"] == body.get("siteSection")), None)
    site_space = next(ss for ss in opened.view.site_spaces if ss["id"] == body["siteSpace"])
    return Place(body, opened, site, nav, section, site_space)


# -- addresses ---------------------------------------------------------------------------------


def _section_base(place: Place, section: Row | None) -> str:
    base = str(place.lookup["siteBasePath"])
    if section is None or section["is_default"]:
        return base
    return f"{base}{section['path']}/"


def _site_space_base(place: Place, ss: Row) -> str:
    section = next((s for s in place.opened.view.sections if s["id"] == ss["section_id"]), None)
    base = _section_base(place, section)
    return base if ss["is_default"] else f"{base}{ss['path']}/"


# -- chrome ------------------------------------------------------------------------------------


def _tabs(place: Place) -> list[dict[str, Any]]:
    """Sections as tabs; a group's sections under the group's title."""
    view = place.opened.view
    current = place.section["id"] if place.section is not None else None
    out: list[dict[str, Any]] = []
    seen_groups: set[str] = set()
    for section in view.sections:
        tab = {
            "title": section["title"],
            "url": _section_base(place, section),
            "current": section["id"] == current,
        }
        group_id = section["group_id"]
        if group_id is None:
            out.append(tab)
            continue
        if group_id in seen_groups:
            continue
        seen_groups.add(group_id)
        group = next(g for g in view.groups if g["id"] == group_id)
        members = [
            {
                "title": s["title"],
                "url": _section_base(place, s),
                "current": s["id"] == current,
            }
            for s in view.sections
            if s["group_id"] == group_id
        ]
        out.append(
            {
                "title": group["title"],
                "group": members,
                "current": any(m["current"] for m in members),
            }
        )
    return out


def _variants(place: Place) -> list[dict[str, Any]]:
    view = place.opened.view
    key = place.site_space["section_key"]
    return [
        {
            "title": view.spaces[ss["space_id"]]["title"],
            "url": _site_space_base(place, ss),
            "current": ss["id"] == place.site_space["id"],
        }
        for ss in view.site_spaces
        # A hidden site space (GitBook 0.202) is left out of the navigation, unless it is the
        # one being read.
        if ss["section_key"] == key and (not ss["hidden"] or ss["id"] == place.site_space["id"])
    ]


def _sidebar(listed: list[NavPage], base: str, current: str | None) -> list[dict[str, Any]]:
    return [
        {
            "title": p.title,
            "url": None if p.kind == "group" else _page_url(p, base),
            "depth": p.depth,
            "group": p.kind == "group",
            "current": p.id == current,
            "external": p.kind == "link",
        }
        for p in listed
    ]


def _page_url(page: NavPage, base: str) -> str | None:
    if page.kind == "link":
        return page.href if page.href and page.href.startswith(("http://", "https://")) else None
    return f"{base}{page.path}"


def _theme(site: Row) -> dict[str, str]:
    styling = DEFAULT_CUSTOMIZATION["styling"]
    return {
        "primary_light": styling["primaryColor"]["light"],
        "primary_dark": styling["primaryColor"]["dark"],
        "default": DEFAULT_CUSTOMIZATION["themes"]["default"],
    }


def _robots(site: Row, page: NavPage | None = None) -> str | None:
    if site["visibility"] != "public" or (page is not None and page.hidden):
        return "noindex, nofollow"
    return None


def _etag(*parts: Any) -> str:
    digest = hashlib.sha256(json.dumps(parts, default=str, sort_keys=True).encode()).hexdigest()
    return f'"{digest[:32]}"'


def _structure_key(place: Place) -> list[Any]:
    """What a page's chrome shows of the site besides the page: the site row's fields (not
    just its `updated_at`, which two changes in one millisecond would share), the structure
    version (sections and groups), and the site spaces and spaces this visitor sees."""
    view = place.opened.view
    site = place.site
    return [
        [site[k] for k in ("updated_at", "title", "visibility", "hostname", "structure_version")],
        [(s["id"], s["title"], s["path"]) for s in view.sections],
        [
            (ss["id"], ss["space_id"], ss["path"], view.spaces[ss["space_id"]]["title"])
            for ss in view.site_spaces
        ],
        [(g["id"], g["title"]) for g in view.groups],
        place.opened.scope,
    ]


def kept_page(key: str) -> bytes | None:
    return _pages.get(key)


def keep_page(key: str, body: bytes) -> None:
    _pages.put(key, body)


# -- answers -----------------------------------------------------------------------------------


def _clean_url(url: str, query: dict[str, str]) -> str:
    rest = {k: v for k, v in query.items() if k not in ("shareKey", "jwt_token")}
    path = urlsplit(url).path
    return path + (f"?{urlencode(rest)}" if rest else "")


def _refused(who: Visitor) -> Answer:
    """A 404 that does not say whether the site exists; a visitor who brought a key or token
    is told it does not open this page. Their cookies stay: the same token may open the
    site's other pages (a condition may hide just this one)."""
    brought = bool(who.share_key or who.token)
    return Answer(
        status=404,
        template="refused.html" if brought else "not_found.html",
        context={"title": "Access refused" if brought else "Page not found"},
    )


async def page(
    conn: AsyncConnection,
    *,
    url: str,
    query: dict[str, str],
    cookies: dict[str, str],
    base_url: str,
    public: str,
    if_none_match: str | None,
    site_base: str,
    loaded: published.Current | None = None,
) -> Answer:
    who, from_url = _visitor(query, cookies)
    found = await _place(conn, url, who, base_url, public, cookies, loaded)
    if isinstance(found, published.Lookup):
        return Answer(status=302, headers={"Location": str(found.body["redirect"])})
    if found is None:
        return await _missing_page(
            conn, url, site_base, query, cookies, base_url=base_url, public=public, loaded=loaded
        )
    place = found
    if from_url:
        return _keep_in_cookies(place, url, query)
    nav = place.nav
    page_id = place.lookup.get("page")
    current = nav.pages.get(page_id) if page_id else None
    base = str(place.lookup["basePath"])
    if current is not None and current.kind == "group":
        # A group is a heading in the sidebar, not a page: its first shown page stands for it.
        first = next(
            (
                nav.pages[c]
                for c in nav.children.get(current.id, ())
                if nav.pages[c].kind == "document" and nav.shown(c, place.opened.scope)
            ),
            None,
        )
        if first is None:
            return _refused(who)
        return Answer(status=302, headers={"Location": f"{base}{first.path}"})
    if current is not None and current.kind == "link":
        target = _page_url(current, base)
        if target is None:
            return _refused(who)
        return Answer(status=302, headers={"Location": target})
    etag = _etag(VERSION, place.lookup, _structure_key(place))
    headers = {
        "ETag": etag,
        "Last-Modified": format_datetime(nav.created_at, usegmt=True),
        # Visitors of non-public sites see what their cookie opens, members what their rights
        # open, visitors with claims what the claims open: never a shared cache. The same URL
        # answers differently with another cookie, hence Vary.
        "Cache-Control": "public, no-cache"
        if place.site["visibility"] == "public" and not place.opened.personal
        else "private, no-cache",
        "Vary": "Cookie",
    }
    robots = _robots(place.site, current)
    if robots:
        headers["X-Robots-Tag"] = robots
    if if_none_match is not None and etag in [t.strip() for t in if_none_match.split(",")]:
        return Answer(status=304, headers=headers)
    body = kept_page(etag)
    if body is not None:
        return Answer(status=200, body=body, headers=headers)
    context = await _page_context(conn, place, current, base)
    context["robots"] = robots
    return Answer(
        status=200, template="page.html", context=context, headers=headers, cache_key=etag
    )


def _keep_in_cookies(place: Place, url: str, query: dict[str, str]) -> Answer:
    """Keep what opened the site in a cookie, and show the URL without it."""
    site_base = str(place.lookup["siteBasePath"])
    cookies_out = []
    if query.get("shareKey"):
        cookies_out.append((SHARE_COOKIE, query["shareKey"], site_base))
    if query.get("jwt_token"):
        cookies_out.append((VISITOR_COOKIE, query["jwt_token"], site_base))
    return Answer(
        status=303,
        headers={"Location": _clean_url(url, query)},
        set_cookies=cookies_out,
    )


# -- a missing page inside a site ----------------------------------------------------------------


def _enclosing(url: str, site_base: str) -> list[str]:
    """The addresses that hold a missing page's, nearest first, down to the site's own. A
    section's and a site space's paths are one segment each, so the first two segments below
    the site name the site space the address falls in (or they are pages of the default one)."""
    parts = urlsplit(url)
    rest = [s for s in parts.path[len(site_base) :].split("/") if s]
    origin = f"{parts.scheme}://{parts.netloc}"
    return [
        f"{origin}{site_base}{'/'.join(rest[:kept])}"
        for kept in range(min(2, len(rest) - 1), -1, -1)
    ]


async def _missing_page(
    conn: AsyncConnection,
    url: str,
    site_base: str,
    query: dict[str, str],
    cookies: dict[str, str],
    *,
    base_url: str,
    public: str,
    loaded: published.Current | None,
) -> Answer:
    """A 404 for an address of a site that leads nowhere. If the visitor may open the site, the
    page keeps its chrome (header, search, tabs, the sidebar of the site space the address
    falls in); otherwise it is the bare 404 of a site that does not exist, so a site closed to
    them shows nothing of itself. Each try is the same `resolve` a page is."""
    who, from_url = _visitor(query, cookies)
    for address in _enclosing(url, site_base):
        found = await _place(conn, address, who, base_url, public, cookies, loaded)
        if isinstance(found, Place):
            if from_url:
                return _keep_in_cookies(found, url, query)
            return await _not_found_in(conn, found)
        if found is not None:
            break  # a redirect: the site is not open to this visitor
    return _refused(who)


async def _not_found_in(conn: AsyncConnection, place: Place) -> Answer:
    base = str(place.lookup["basePath"])
    context = await _page_context(conn, place, None, base)
    context.update(title="Page not found", robots="noindex, nofollow", start=base)
    return Answer(
        status=404,
        template="not_found_in_site.html",
        context=context,
        # It draws the visitor's structure, like their pages: never a shared cache.
        headers={"Cache-Control": "private, no-cache", "X-Robots-Tag": "noindex, nofollow"},
    )


async def _page_context(
    conn: AsyncConnection, place: Place, current: NavPage | None, base: str
) -> dict[str, Any]:
    nav = place.nav
    scope = place.opened.scope
    listed = nav.listed(scope)
    documents = [p for p in listed if p.kind == "document"]
    body: render.Body | None = None
    if current is not None:
        # Links in the body name only pages this visitor may see; which those are follows from
        # which conditional pages' own conditions hold, so bodies are kept per that set.
        variant = nav.shown_conditions(scope)
        body = render.kept(nav.revision_id, current.id, base, variant)
        if body is None:
            text = ""
            if current.markdown:
                row = await content_repository.get(conn, place.lookup["space"], nav.revision_id)
                assert row is not None  # the nav was built from it
                snap = content_repository.snapshot(conn, row)
                text = (await snap.markdowns([current.markdown])).get(current.markdown, "")
                text = await reusable.expand(snap, text)
            paths = {p.id: p.path for p in nav.pages.values() if nav.shown(p.id, scope)}
            body = await render.render(
                nav.revision_id,
                current.id,
                base,
                variant,
                text,
                paths,
                tenant=str(place.site["organization_id"]),
            )
    prev_page = next_page = None
    if current is not None:
        index = next((i for i, p in enumerate(documents) if p.id == current.id), None)
        if index is not None:
            prev_page = documents[index - 1] if index > 0 else None
            next_page = documents[index + 1] if index + 1 < len(documents) else None
    crumbs: list[dict[str, Any]] = []
    walker = nav.pages.get(current.parent) if current is not None and current.parent else None
    while walker is not None:
        crumbs.append(
            {
                "title": walker.title,
                "url": None if walker.kind == "group" else f"{base}{walker.path}",
            }
        )
        walker = nav.pages.get(walker.parent) if walker.parent else None
    crumbs.reverse()
    view = place.opened.view
    space = view.spaces[place.site_space["space_id"]]
    return {
        "title": current.title if current is not None else space["title"],
        "site_title": place.site["title"],
        "site_base": place.lookup["siteBasePath"],
        "tabs": _tabs(place),
        "variants": _variants(place),
        "sidebar": _sidebar(listed, base, current.id if current else None),
        "crumbs": crumbs,
        "page": current,
        "body": body.html if body is not None else "",
        "toc": [h for h in body.headings if 2 <= h.level <= 3] if body is not None else [],
        "prev": {"title": prev_page.title, "url": f"{base}{prev_page.path}"} if prev_page else None,
        "next": {"title": next_page.title, "url": f"{base}{next_page.path}"} if next_page else None,
        "updated": (current.updated_at or "")[:10] if current is not None else "",
        "theme": _theme(place.site),
        "search_url": f"{place.lookup['siteBasePath']}~search",
        "query": "",
    }


async def search(
    conn: AsyncConnection,
    *,
    url: str,
    query: dict[str, str],
    cookies: dict[str, str],
    base_url: str,
    public: str,
    loaded: published.Current | None = None,
) -> Answer | tuple[Answer, list[dict[str, Any]]]:
    """Search every site space the visitor sees, keeping only pages shown to them; results
    link to the section's anchor. `url` is the site's address (the default content)."""
    who, _ = _visitor({}, cookies)
    found = await _place(conn, url, who, base_url, public, cookies, loaded)
    if not isinstance(found, Place):
        return _refused(who)
    place = found
    text = (query.get("q") or "")[:MAX_QUERY]
    view = place.opened.view
    by_space = {ss["space_id"]: ss for ss in view.site_spaces}
    results: list[dict[str, Any]] = []
    if text.strip():
        hits = await search_engine.search(
            conn, text, space_ids=sorted(by_space), limit=SEARCH_LIMIT, offset=0, count=False
        )
        # Each hit space's page tree once, not once per hit.
        trees = {
            sid: await navs.load(conn, sid, view.spaces[sid]["revision_id"])
            for sid in {hit.space_id for hit in hits.hits}
        }
        for hit in hits.hits:
            ss = by_space[hit.space_id]
            space = view.spaces[hit.space_id]
            nav = trees[hit.space_id]
            page = nav.pages.get(hit.page_id) if nav is not None else None
            if nav is None or page is None or page.kind != "document":
                continue
            if not nav.shown(page.id, place.opened.scope):
                continue
            base = _site_space_base(place, ss)
            results.append(
                {
                    "title": page.title,
                    "space": space["title"],
                    "url": f"{base}{page.path}",
                    "sections": [
                        {
                            "title": s.title or page.title,
                            "url": f"{base}{page.path}" + (f"#{s.anchor}" if s.anchor else ""),
                            "body": s.body,
                        }
                        for s in hit.sections
                    ],
                }
            )
    context = await _page_context(conn, place, None, str(place.lookup["basePath"]))
    context.update(
        {
            "title": f"Search: {text}" if text else "Search",
            "query": text,
            "results": results,
            "robots": "noindex, nofollow",
        }
    )
    # Results follow the reader's cookie (a member's view, a visitor's claims).
    headers = {"Cache-Control": "private, no-cache", "Vary": "Cookie"}
    return Answer(status=200, template="search.html", context=context, headers=headers), results


async def site_file(
    conn: AsyncConnection,
    blobs: Any,
    *,
    url: str,
    file_id: str,
    cookies: dict[str, str],
    base_url: str,
    public: str,
    loaded: published.Current | None = None,
) -> Answer:
    """A file of the space a published page shows (images in pages), if the visitor may see
    that page's site space."""
    who, _ = _visitor({}, cookies)
    found = await _place(conn, url, who, base_url, public, cookies, loaded)
    if not isinstance(found, Place):
        return _refused(who)
    row = await content_repository.get(conn, found.lookup["space"], found.nav.revision_id)
    if row is None:
        return _refused(who)
    rec = await content_repository.snapshot(conn, row).file(file_id)
    if rec is None:
        return _refused(who)
    data = await blobs.get(rec["blob"])
    if data is None:
        return _refused(who)
    # Only raster images are shown inline; anything else downloads (and never runs).
    media_type, inline = served_type(rec.get("contentType"))
    return Answer(
        status=200,
        body=data,
        media_type=media_type,
        headers={
            "Content-Disposition": "inline" if inline else "attachment",
            "Cache-Control": "private, max-age=3600",
            "Content-Security-Policy": "default-src 'none'; sandbox",
        },
    )


async def site_meta(
    conn: AsyncConnection,
    *,
    url: str,
    kind: str,
    cookies: dict[str, str],
    base_url: str,
    public: str,
    site_base: str,
    loaded: published.Current | None = None,
) -> Answer:
    """`robots.txt` and `sitemap.xml` at the site's address: a public site lists its pages
    (not hidden, no conditions); any other site is not to be indexed. `url` is the site's
    address, whose origin the listed addresses take (on a custom host, the stored name)."""
    found = await _place(conn, url, Visitor(), base_url, public, None, loaded)
    public_site = isinstance(found, Place) and found.site["visibility"] == "public"
    origin = "{0.scheme}://{0.netloc}".format(urlsplit(url))
    if kind == "robots.txt":
        text = (
            f"User-agent: *\nAllow: {site_base}\nSitemap: {origin}{site_base}sitemap.xml\n"
            if public_site
            else "User-agent: *\nDisallow: /\n"
        )
        return Answer(status=200, body=text.encode(), media_type="text/plain; charset=utf-8")
    if not isinstance(found, Place) or not public_site:
        return _refused(Visitor())
    place = found
    view = place.opened.view
    entries: list[str] = []
    for ss in view.site_spaces:
        if ss["condition"] is not None:
            continue
        section = next((s for s in view.sections if s["id"] == ss["section_id"]), None)
        if section is not None and section["condition"] is not None:
            continue
        space = view.spaces[ss["space_id"]]
        nav = await navs.load(conn, ss["space_id"], space["revision_id"])
        if nav is None:
            continue
        base = _site_space_base(place, ss)
        for p in nav.listed({}):
            if p.kind == "document" and all(
                nav.pages[a].condition is None for a in _ancestry(nav, p)
            ):
                entries.append(f"{origin}{base}{p.path}")
    from xml.sax.saxutils import escape

    xml = (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
        + "".join(f"<url><loc>{escape(u)}</loc></url>\n" for u in entries)
        + "</urlset>\n"
    )
    return Answer(status=200, body=xml.encode(), media_type="application/xml")


def _ancestry(nav: Nav, page: NavPage) -> list[str]:
    out = [page.id]
    while page.parent:
        page = nav.pages[page.parent]
        out.append(page.id)
    return out


__all__ = ["Answer", "page", "search", "shows", "site_file", "site_meta"]
