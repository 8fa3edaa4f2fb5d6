"""Published content: what a visitor of a site sees, decided in one place for the API
(`GET …/sites/{id}/published`, `GET/POST /urls/published`) and, later, a server-rendered reader.

Who sees what:
- a site that is not published shows nothing to visitors;
- `public` and `unlisted` sites open to anyone; `share-link` ones only with an active share
  link's key; `visitor-auth` ones only with a visitor token signed with the site's key;
- a visitor token's claims (and the visitor's unsigned claims), as far as the adaptive schema
  admits them, decide which sections, site spaces and pages whose `condition` holds are shown;
- a private space (or a deleted one) inside a site is shown to no visitor;
- organization members who may view the site (asking `GET …/published` with their token) see
  it whole, as the rest of the API shows it.

Everything is read with one connection; nothing is written."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from docshelf.authz.content import ContentScope
from docshelf.content import repository as content_repository
from docshelf.models import organizations, sites
from docshelf.organization.policy import OrgAccess
from docshelf.share_link import repository as share_links
from docshelf.site import repository, visitor
from docshelf.site.conditions import shows
from docshelf.site.presenter import SiteView, present_site

# GitBook's defaults for a site nobody customised (Docshelf stores no customization yet).
DEFAULT_CUSTOMIZATION: dict[str, Any] = {
    "styling": {
        "theme": "clean",
        "primaryColor": {"light": "#346DDB", "dark": "#346DDB"},
        "infoColor": {"light": "#787878", "dark": "#787878"},
        "successColor": {"light": "#02A35F", "dark": "#02A35F"},
        "warningColor": {"light": "#F59E0B", "dark": "#F59E0B"},
        "dangerColor": {"light": "#FB2C36", "dark": "#FB2C36"},
        "corners": "rounded",
        "depth": "subtle",
        "links": "default",
        "font": "Inter",
        "monospaceFont": "IBMPlexMono",
        "background": "plain",
        "icons": "regular",
        "sidebar": {"background": "default", "list": "default"},
        "search": "subtle",
        "codeTheme": {
            "default": {"light": "default-light", "dark": "default-dark"},
            "openapi": {"light": "default-light", "dark": "default-dark"},
        },
    },
    "internationalization": {"locale": "en"},
    "favicon": {},
    "header": {"preset": "default", "links": []},
    "footer": {"groups": []},
    "themes": {"default": "light", "toggeable": True},
    "pdf": {"enabled": True},
    "feedback": {"enabled": False},
    "ai": {"mode": "none"},
    "advancedCustomization": {"enabled": True},
    "trademark": {"enabled": True},
    "externalLinks": {"target": "self"},
    "pagination": {"enabled": True},
    # 0.130 reads the two booleans, 0.202 the ordered list; the reader offers markdown and PDF.
    "pageActions": {"externalAI": True, "markdown": True, "items": ["markdown", "pdf"]},
    "git": {"showEditLink": False},
    "privacyPolicy": {},
    "socialPreview": {},
    "insights": {"trackingCookie": True},
    "socialAccounts": [],
}


@dataclass(frozen=True)
class Visitor:
    """What a visitor brings: a share key, a visitor token, unsigned claims (all optional)."""

    share_key: str | None = None
    token: str | None = None
    unsigned: dict[str, Any] | None = None


@dataclass
class Opened:
    """A site as one visitor sees it. `scope` is the condition scope, None for a member."""

    view: SiteView
    scope: dict[str, Any] | None
    share_key: str | None = None


def adaptive_schema(site: sa.RowMapping) -> dict[str, Any] | None:
    text = site["adaptive_schema"]
    return None if text is None else dict(json.loads(text))


async def visitor_scope(
    conn: AsyncConnection, site: sa.RowMapping, who: Visitor
) -> dict[str, Any] | None:
    """The visitor's condition scope if they may open the site, else None (a 404)."""
    if not site["published"]:
        return None
    signed = visitor.signed_claims(who.token, site["visitor_key"]) if who.token else None
    if site["visibility"] == "share-link":
        key = who.share_key
        if not key or await share_links.active_link(conn, site["id"], key) is None:
            return None
    elif site["visibility"] == "visitor-auth" and signed is None:
        return None
    unsigned = who.unsigned if who.unsigned and visitor.unsigned_size_ok(who.unsigned) else None
    return visitor.visitor_scope(adaptive_schema(site), signed, unsigned)


async def site_view(
    conn: AsyncConnection, site: sa.RowMapping, scope: ContentScope, base_url: str, public: str
) -> SiteView:
    """The whole structure of a site as `scope` may see it, read once (sites hold tens of
    items, not thousands): what the API's structure routes and the published look-ups draw."""
    site_id = site["id"]
    return SiteView(
        site=site,
        sections=await repository.sections(conn, site_id),
        groups=await repository.groups(conn, site_id),
        site_spaces=await repository.all_site_spaces(conn, site_id),
        spaces=await repository.spaces_of_site(conn, site_id),
        scope=scope,
        base_url=base_url,
        public=public,
    )


def _filtered(shown: SiteView, scope: dict[str, Any]) -> SiteView:
    """The structure a visitor sees: conditions hold, spaces are not private, and a section or
    group left with nothing to show goes too."""
    spaces = shown.spaces
    site_spaces = [
        ss
        for ss in shown.site_spaces
        if spaces[ss["space_id"]]["visibility"] != "private"
        and spaces[ss["space_id"]]["deleted_at"] is None
        and shows(ss["condition"], scope)
    ]
    with_spaces = {ss["section_id"] for ss in site_spaces}
    sections = [
        s for s in shown.sections if s["id"] in with_spaces and shows(s["condition"], scope)
    ]
    kept = {s["id"] for s in sections}
    site_spaces = [ss for ss in site_spaces if ss["section_id"] is None or ss["section_id"] in kept]
    groups = [g for g in shown.groups if any(s["group_id"] == g["id"] for s in sections)]
    return SiteView(
        site=shown.site,
        sections=sections,
        groups=groups,
        site_spaces=site_spaces,
        spaces=spaces,
        scope=shown.scope,
        base_url=shown.base_url,
        public=shown.public,
    )


async def open_for_visitor(
    conn: AsyncConnection, site: sa.RowMapping, who: Visitor, base_url: str, public: str
) -> Opened | None:
    scope = await visitor_scope(conn, site, who)
    if scope is None:
        return None
    nobody = ContentScope(
        org_id=site["organization_id"], user_id="", is_member=False, org_role=None
    )
    shown = await site_view(conn, site, nobody, base_url, public)
    key = who.share_key if site["visibility"] == "share-link" else None
    return Opened(view=_filtered(shown, scope), scope=scope, share_key=key)


async def open_for_member(
    conn: AsyncConnection, site: sa.RowMapping, scope: ContentScope, base_url: str, public: str
) -> Opened:
    return Opened(view=await site_view(conn, site, scope, base_url, public), scope=None)


async def _org(conn: AsyncConnection, org_id: str) -> sa.RowMapping:
    row = (
        (await conn.execute(sa.select(organizations).where(organizations.c.id == org_id)))
        .mappings()
        .one()
    )
    return row


async def published_site(
    conn: AsyncConnection, opened: Opened, org: OrgAccess | None
) -> dict[str, Any]:
    """GitBook's `PublishedContentSite`. `org` is the member's access; a visitor has none."""
    site = opened.view.site
    if org is None:
        org = OrgAccess(org=await _org(conn, site["organization_id"]), is_member=False, role=None)
    return {
        "object": "published-content-site",
        "site": present_site(site, org, opened.view.base_url, opened.view.public),
        "structure": opened.view.structure(),
        "customizations": {
            "site": DEFAULT_CUSTOMIZATION,
            "siteSpaces": {ss["id"]: DEFAULT_CUSTOMIZATION for ss in opened.view.site_spaces},
        },
        # Docshelf runs no integrations, so no site loads their scripts.
        "scripts": [],
    }


# -- published URLs ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Lookup:
    """Where a published URL leads: a site's content, or (`redirect`) elsewhere."""

    body: dict[str, Any]
    # The structure the visitor was shown (None for a redirect), so that a reader needs no
    # second look-up for the sections and variants it draws.
    opened: Opened | None = field(default=None, compare=False)


async def _site_at(conn: AsyncConnection, org_seg: str, site_seg: str) -> sa.RowMapping | None:
    org_id = (
        await conn.execute(
            sa.select(organizations.c.id).where(
                sa.or_(organizations.c.hostname == org_seg, organizations.c.id == org_seg)
            )
        )
    ).scalar()
    if org_id is None:
        return None
    site_id = (
        await conn.execute(
            sa.select(sites.c.id)
            .where(
                sites.c.organization_id == org_id,
                sa.or_(sites.c.basename == site_seg, sites.c.id == site_seg),
            )
            # A basename that equals another site's id: the basename wins, as addresses use it.
            .order_by(sa.case((sites.c.basename == site_seg, 0), else_=1))
            .limit(1)
        )
    ).scalar()
    return None if site_id is None else await repository.get_site(conn, site_id, org_id)


async def _page(
    conn: AsyncConnection, space: sa.RowMapping, slugs: list[str], scope: dict[str, Any] | None
) -> str | None:
    """The page at the slug path (its first page for none), every page on the way shown to
    this visitor; None if there is none."""
    row = await content_repository.get(conn, space["id"], space["revision_id"])
    if row is None:
        return None
    snap = content_repository.snapshot(conn, row)
    node = await snap.root()
    found: str | None = None
    if not slugs:
        # One batched read of the top level, not a look-up per child.
        children = await snap.pages([cid for cid, _ in node["children"]])
        for child_id, _ in node["children"]:
            child = children.get(child_id)
            if (
                child is not None
                and child.get("type") != "link"
                and shows(child.get("condition"), scope)
            ):
                return str(child_id)
        return None
    for slug in slugs:
        found = next((cid for cid, cslug in node["children"] if cslug == slug), None)
        if found is None:
            return None
        child = await snap.page(found)
        if child is None or not shows(child.get("condition"), scope):
            return None
        node = child
    return found


async def resolve(
    conn: AsyncConnection,
    url: str,
    who: Visitor,
    *,
    base_url: str,
    public: str,
    redirect_on_error: bool = False,
    member: str | None = None,
) -> Lookup | None:
    """GitBook's `PublishedSiteContentLookup` for a published URL, or None (a 404).

    The URL has the form sites publish: <public URL>/<organization hostname or id>/<site
    basename or id>/[<section path>/][<site-space path>/]<page path>, with `?shareKey=` for
    share-link sites. A missing section or site-space path means the default one.

    `member` is the user id of a signed-in reader (the published site's SSO session): a full
    member of the site's organization sees it as members do through the API, every space
    they may view and no condition applied; anyone else is a visitor."""
    try:
        parts = urlsplit(url)
    except ValueError:  # e.g. a malformed IPv6 host: no published content is there
        return None
    base = urlsplit(public)
    prefix = base.path.rstrip("/")
    if (parts.scheme, parts.netloc) != (base.scheme, base.netloc):
        return None
    if not parts.path.startswith(f"{prefix}/"):
        return None
    segments = [s for s in parts.path[len(prefix) :].split("/") if s]
    if len(segments) < 2:
        return None
    site = await _site_at(conn, segments[0], segments[1])
    if site is None:
        return None
    query = parse_qs(parts.query)
    share_key = who.share_key or next(iter(query.get("shareKey", [])), None)
    who = Visitor(share_key=share_key, token=who.token, unsigned=who.unsigned)
    opened: Opened | None = None
    if member is not None:
        access = await ContentScope.load(conn, site["organization_id"], member)
        if access.is_member and access.org_role is not None:
            opened = await open_for_member(conn, site, access, base_url, public)
    if opened is None:
        opened = await open_for_visitor(conn, site, who, base_url, public)
    if opened is None or (opened.scope is None and member is None):
        fallback = site["fallback_url"]
        if (
            redirect_on_error
            and fallback
            and site["published"]
            and site["visibility"] == "visitor-auth"
        ):
            return Lookup({"target": "external", "redirect": fallback})
        return None
    shown = opened.view
    rest = segments[2:]
    site_base = f"{prefix}/{segments[0]}/{segments[1]}/"
    base_path = site_base
    section: sa.RowMapping | None = None
    if shown.sections:
        section = next((s for s in shown.sections if rest and s["path"] == rest[0]), None)
        if section is not None:
            rest = rest[1:]
            base_path += f"{section['path']}/"
        else:
            section = next((s for s in shown.sections if s["is_default"]), None)
        if section is None:
            return None
    key = section["id"] if section is not None else ""
    siblings = [ss for ss in shown.site_spaces if ss["section_key"] == key]
    site_space = next((ss for ss in siblings if rest and ss["path"] == rest[0]), None)
    if site_space is not None:
        rest = rest[1:]
        base_path += f"{site_space['path']}/"
    else:
        site_space = next((ss for ss in siblings if ss["is_default"]), None)
    if site_space is None:
        return None
    space = shown.spaces[site_space["space_id"]]
    page = await _page(conn, space, rest, opened.scope)
    if page is None and rest:
        return None
    pathname = "/".join(rest)
    body: dict[str, Any] = {
        "site": site["id"],
        "siteSpace": site_space["id"],
        "space": space["id"],
        "revision": space["revision_id"],
        "pathname": pathname,
        "basePath": base_path,
        "siteBasePath": site_base,
        # Docshelf mints no short-lived content token: readers use these published routes.
        "apiToken": "",
        "organization": site["organization_id"],
        "complete": True,
        "canonicalUrl": f"{base.scheme}://{base.netloc}{base_path}{pathname}",
    }
    if section is not None:
        body["siteSection"] = section["id"]
    if page is not None:
        body["page"] = page
    if opened.share_key is not None:
        body["shareKey"] = opened.share_key
    return Lookup(body, opened)
