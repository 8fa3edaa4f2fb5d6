"""Published content: what a visitor of a site sees, decided in one place for the API
(`GET …/sites/{id}/published`, `GET/POST /urls/published`) and, later, a server-rendered reader.

Who sees what:
- a site that is not published shows nothing to visitors;
- `public` and `unlisted` sites open to anyone; `share-link` ones only with an active share
  link's key; `visitor-auth` ones only with a visitor token signed with the site's key;
- a visitor token's claims (and the visitor's unsigned claims), as far as the adaptive schema
  admits them, decide which sections, site spaces and pages whose `condition` holds are shown;
- the site's visibility decides who reads its spaces, whatever the spaces' own visibility (a
  `private` space is one that is not public on its own; publishing it in a site is how it is
  read: GitBook's model); a deleted space is shown to nobody;
- organization members (asking `GET …/published` with their token, or reading with an SSO
  session of the site's organization) see every site space whose space the one permission
  resolver (authz.content) lets them view, no condition applied; a URL outside what they may
  view resolves as it does for any visitor.

Everything is read with one connection; nothing is written."""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import parse_qs, urlsplit

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from docshelf.auth import site_token
from docshelf.auth.site_token import SiteGrant
from docshelf.authz.content import ContentScope
from docshelf.kit.clock import utcnow
from docshelf.kit.db import reads_committed
from docshelf.kit.errors import BadRequest
from docshelf.kit.lru import SizedLRU, counted
from docshelf.organization import repository as org_repository
from docshelf.organization.policy import OrgAccess
from docshelf.site import nav as navs
from docshelf.site import repository, visitor
from docshelf.site.conditions import shows
from docshelf.site.presenter import Row, SiteView, present_site, site_origin

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
    # GitBook's visitor `type`: "human" or "agent" (carried into the site token).
    kind: str = "human"
    # A site content token's grant (auth.site_token): the visitor it was minted for, whose
    # share link and visitor key authentication has checked are still what opened it.
    grant: SiteGrant | None = None


@dataclass
class Opened:
    """A site as one visitor sees it. `scope` is the condition scope, None for a member.
    `personal`: what is shown depends on who asks (a member, or a visitor's claims), so no
    shared cache may keep it."""

    view: SiteView
    scope: dict[str, Any] | None
    share_key: str | None = None
    personal: bool = False


# Given an organization id, the user id of the reader if they are signed in to it (the reader's
# SSO session), else None.
MemberOf = Callable[[str], Awaitable[str | None]]


def adaptive_schema(site: Row) -> dict[str, Any] | None:
    text = site["adaptive_schema"]
    return None if text is None else dict(json.loads(text))


async def visitor_scope(conn: AsyncConnection, site: Row, who: Visitor) -> dict[str, Any] | None:
    """The visitor's condition scope if they may open the site, else None (a 404)."""
    if not site["published"]:
        return None
    if who.grant is not None:
        return who.grant.scope if who.grant.site_id == site["id"] else None
    signed = visitor.signed_claims(who.token, site["visitor_key"]) if who.token else None
    if site["visibility"] == "share-link":
        key = who.share_key
        if not key or await repository.active_share_link(conn, site["id"], key) is None:
            return None
    elif site["visibility"] == "visitor-auth" and signed is None:
        return None
    unsigned = who.unsigned if who.unsigned and visitor.unsigned_size_ok(who.unsigned) else None
    return visitor.visitor_scope(adaptive_schema(site), signed, unsigned)


async def site_view(
    conn: AsyncConnection,
    site: Row,
    scope: ContentScope,
    base_url: str,
    public: str,
    share_key: str | None = None,
) -> SiteView:
    """The whole structure of a site as `scope` may see it, read once (sites hold tens of
    items, not thousands): what the API's structure routes and the published look-ups draw.
    `share_key`: carried by its published URLs if it opens the site (else ignored, as GitBook
    ignores a key where none is needed)."""
    site_id = site["id"]
    sections, groups = await _structure(conn, site)
    site_spaces, spaces = await repository.site_spaces_and_spaces(conn, site_id)
    current = Current(
        site=site, sections=sections, groups=groups, site_spaces=site_spaces, spaces=spaces
    )
    if share_key is not None and not await _opens(conn, site, share_key):
        share_key = None
    return current.view(scope, base_url, public, share_key)


async def _opens(conn: AsyncConnection, site: Row, share_key: str) -> bool:
    """Whether the key is an active share link of this share-link site."""
    if site["visibility"] != "share-link":
        return False
    return await repository.active_share_link(conn, site["id"], share_key) is not None


def _filtered(
    shown: SiteView, keep: Callable[[Row], bool], scope: dict[str, Any] | None
) -> SiteView:
    """The structure with the site spaces `keep` admits (never a deleted space's), the sections
    whose condition holds for `scope` (all of them for None), and no section or group left with
    nothing to show."""
    spaces = shown.spaces
    site_spaces = [
        ss for ss in shown.site_spaces if spaces[ss["space_id"]]["deleted_at"] is None and keep(ss)
    ]
    with_spaces = {ss["section_id"] for ss in site_spaces}
    sections = [
        s
        for s in shown.sections
        if s["id"] in with_spaces and (scope is None or shows(s["condition"], scope))
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
        share_key=shown.share_key,
    )


async def open_for_visitor(
    conn: AsyncConnection,
    site: Row,
    who: Visitor,
    base_url: str,
    public: str,
    current: Current | None = None,
) -> Opened | None:
    """`current`: the site's structure as `load` read it (else it is read here)."""
    scope = await visitor_scope(conn, site, who)
    if scope is None:
        return None
    nobody = ContentScope(
        org_id=site["organization_id"], user_id="", is_member=False, org_role=None
    )
    if current is not None:
        shown = current.view(nobody, base_url, public)
    else:
        shown = await site_view(conn, site, nobody, base_url, public)
    key = who.share_key if site["visibility"] == "share-link" else None
    view = _filtered(shown, lambda ss: shows(ss["condition"], scope), scope)
    if who.grant is not None:
        key = None  # the token stands for the share key; it is not handed back
        view = _filtered(view, lambda ss: ss["space_id"] in who.grant.spaces, scope)  # type: ignore[union-attr]
    claims = who.token is not None or bool(who.unsigned) or bool(who.grant and who.grant.scope)
    return Opened(view=view, scope=scope, share_key=key, personal=claims)


async def open_for_member(
    conn: AsyncConnection,
    site: Row,
    scope: ContentScope,
    base_url: str,
    public: str,
    current: Current | None = None,
) -> Opened:
    """The site as a member sees it: the site spaces whose space they may view."""
    if current is not None:
        shown = current.view(scope, base_url, public)
    else:
        shown = await site_view(conn, site, scope, base_url, public)
    spaces = shown.spaces
    view = _filtered(shown, lambda ss: scope.space_role(spaces[ss["space_id"]]) is not None, None)
    return Opened(view=view, scope=None, personal=True)


# -- a site's current structure, read with one statement per request ----------------------------
#
# Published look-ups are the reader's hot path. Each reads, in ONE statement, the site row (with
# its organization's hostname) and every site space joined to its space: everything that can
# change without the site's own writers knowing (a space made private, deleted, purged, renamed,
# or given a new revision; an organization's hostname) is read fresh, on every request, on
# every process. Only the sections and groups, which nothing but the site package writes, are
# kept between requests, per process, under (site, `structure_version`): every statement that
# writes sections, groups or site spaces bumps that number in its transaction
# (site/repository.py), so a kept structure is never used after a change has committed, and
# it is filled only from committed reads, and used only by reads (the API's structure routes,
# through `site_view`, read inside a write afresh).

_KEEP_STRUCTURES = 1024
_structures: SizedLRU[tuple[str, int], tuple[list[Row], list[Row]]] = counted(_KEEP_STRUCTURES)
# GitBook's `SiteHostname`.
HOSTNAME = re.compile(
    r"^([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?[.]){2,}[a-z0-9][a-z0-9-]{0,61}[a-z0-9]$"
)


def is_hostname(text: str) -> bool:
    # fullmatch: `$` alone would let a trailing newline through.
    return len(text) <= 512 and HOSTNAME.fullmatch(text) is not None


@dataclass(frozen=True)
class Current:
    """A site as committed now: its row, its sections and groups (kept under the structure
    version), its site spaces in order and their spaces."""

    site: Row
    sections: list[Row]
    groups: list[Row]
    site_spaces: list[Row]
    spaces: dict[str, Row]

    def view(
        self, scope: ContentScope, base_url: str, public: str, share_key: str | None = None
    ) -> SiteView:
        return SiteView(
            site=self.site,
            sections=self.sections,
            groups=self.groups,
            site_spaces=self.site_spaces,
            spaces=self.spaces,
            scope=scope,
            base_url=base_url,
            public=public,
            share_key=share_key,
        )


async def _structure(conn: AsyncConnection, site: Row) -> tuple[list[Row], list[Row]]:
    key = (str(site["id"]), int(site["structure_version"]))
    # Inside a write transaction, read afresh: it may hold this version's rows uncommitted, or
    # have changed them since it read `site` (whose version it bumped after).
    writing = not reads_committed(conn)
    kept = None if writing else _structures.get(key)
    if kept is not None:
        return kept
    kept = (
        [dict(r) for r in await repository.sections(conn, key[0])],
        [dict(r) for r in await repository.groups(conn, key[0])],
    )
    if not writing:
        _structures.put(key, kept)
    return kept


async def load(
    conn: AsyncConnection,
    *,
    hostname: str | None = None,
    segments: tuple[str, str] | None = None,
) -> Current | None:
    """The site served at a custom `hostname`, or at the address segments (organization
    hostname or id, site basename or id); None if there is none."""
    if hostname is not None:
        if not is_hostname(hostname):
            return None
        rows = await repository.current_by_hostname(conn, hostname)
    elif segments is not None:
        rows = await repository.current_by_segments(conn, *segments)
    else:
        return None
    if not rows:
        return None
    if segments is not None:
        org_seg, site_seg = segments
        # A basename that equals another site's id: the basename wins, as addresses use it;
        # likewise an organization hostname over another organization's id.
        best = min(
            rows,
            key=lambda r: (r["basename"] != site_seg, r["org_hostname"] != org_seg, r["id"]),
        )
        rows = [r for r in rows if r["id"] == best["id"]]
    first = rows[0]
    site = {name: first[name] for name in repository.CURRENT_SITE_NAMES}
    listed: list[Row] = []
    shown: dict[str, Row] = {}
    for r in rows:
        if r["ss_id"] is None:
            continue
        listed.append({name: r[label] for name, label in repository.CURRENT_SS_NAMES})
        shown[r["sp_id"]] = {name: r[label] for name, label in repository.CURRENT_SPACE_NAMES}
    sections, groups = await _structure(conn, site)
    return Current(site, sections, groups, listed, shown)


async def _org(conn: AsyncConnection, org_id: str) -> sa.RowMapping:
    row = await org_repository.get(conn, org_id)
    assert row is not None  # a site's organization outlives it (FK on delete cascade)
    return row


async def published_site(
    conn: AsyncConnection, opened: Opened, org: OrgAccess | None, share_key: str | None = None
) -> dict[str, Any]:
    """GitBook's `PublishedContentSite`. `org` is the member's access; a visitor has none.
    `share_key`: carried by the structure's published URLs if it opens the site, as
    `site_view` carries it."""
    site = opened.view.site
    view = opened.view
    # A visitor's key was checked when it opened the site; a member's is checked here.
    key = opened.share_key if opened.scope is not None else None
    if opened.scope is None and share_key is not None and await _opens(conn, site, share_key):
        key = share_key
    if key is not None:
        view = replace(view, share_key=key)
    if org is None:
        org = OrgAccess(org=await _org(conn, site["organization_id"]), is_member=False, role=None)
    presented = present_site(site, org, view.base_url, view.public, view.share_key)
    # Only a space this reader is shown: the default site space's, else the first shown.
    shown = opened.view.site_spaces
    section = next((s["id"] for s in opened.view.sections if s["is_default"]), None)
    first = next(
        (ss for ss in shown if ss["is_default"] and ss["section_id"] == section),
        shown[0] if shown else None,
    )
    if first is not None:
        presented["defaultSpace"] = first["space_id"]
    else:
        presented.pop("defaultSpace", None)
    return {
        "object": "published-content-site",
        "site": presented,
        "structure": view.structure(),
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


async def _page(
    conn: AsyncConnection, space: Row, slugs: list[str], scope: dict[str, Any] | None
) -> str | None:
    """The page at the slug path (its first page for none), every page on the way shown to
    this visitor; None if there is none. Read from the revision's page tree, which is kept per
    process by (space, revision): revisions never change."""
    nav = await navs.load(conn, space["id"], space["revision_id"])
    if nav is None:
        return None
    if not slugs:
        for child_id in nav.children.get(None, ()):
            child = nav.pages[child_id]
            if child.kind != "link" and nav.shown(child_id, scope):
                return child_id
        return None
    found = nav.by_path.get("/".join(slugs))
    if found is None or not nav.shown(found, scope):
        return None
    return found


async def _site_token(
    conn: AsyncConnection,
    site: Row,
    opened: Opened,
    site_space: Row,
    section: Row | None,
    who: Visitor,
) -> str:
    """GitBook's `apiToken`: a site content token for what this visitor was shown
    (auth.site_token); none for a member's look-up (the reader's), which needs none."""
    if opened.scope is None:
        return ""
    link = None
    if opened.share_key is not None:
        found = await repository.active_share_link(conn, site["id"], opened.share_key)
        link = None if found is None else str(found["id"])
    grant = SiteGrant(
        organization_id=site["organization_id"],
        site_id=site["id"],
        site_space_id=site_space["id"],
        space_id=site_space["space_id"],
        spaces=frozenset(ss["space_id"] for ss in opened.view.site_spaces),
        visibility=site["visibility"],
        scope=opened.scope,
        section_id=None if section is None else section["id"],
        share_link_id=link,
        visitor_key_print=(
            site_token.key_print(site["visitor_key"])
            if site["visibility"] == "visitor-auth"
            else None
        ),
        visitor_type=who.kind,
    )
    signed = who.token is not None and (
        visitor.signed_claims(who.token, site["visitor_key"]) is not None
    )
    until = visitor.expiry(who.token) if signed else None
    token = await site_token.mint(conn, grant, utcnow(), until=until)
    if token is None:
        raise BadRequest(
            "The visitor's claims are too large to carry in a site token: send fewer claims"
        )
    return token


def _canonical(site: Row, public: str, rest: str) -> str | None:
    """A site with a custom hostname is canonically there, however it was reached."""
    origin = site_origin(site, public)
    return None if origin is None else f"{origin}/{rest}"


async def resolve(
    conn: AsyncConnection,
    url: str,
    who: Visitor,
    *,
    base_url: str,
    public: str,
    redirect_on_error: bool = False,
    member: MemberOf | None = None,
    current: Current | None = None,
    require_page: bool = True,
) -> Lookup | None:
    """GitBook's `PublishedSiteContentLookup` for a published URL, or None (a 404).

    `require_page` False is GitBook's look-up: it resolves the site, section and site space,
    and whatever path is left is the `pathname`, whether a page is there or not (the client
    decides what a path shows: a page, its own 404, `~gitbook/search`...); `page` is given
    only when a page shown to the caller is there. True (the reader's) answers None instead.

    The URL has the form sites publish: <public URL>/<organization hostname or id>/<site
    basename or id>/[<section path>/][<site-space path>/]<page path>, with `?shareKey=` for
    share-link sites. A missing section or site-space path means the default one.

    `member` finds a signed-in reader (an SSO session of the site's organization): a member
    sees the site spaces they may view through the API, no condition applied; a URL outside
    them, and anyone who is not a member, resolves as for a visitor.

    A site with a custom hostname is also found at `<scheme>://<hostname>/[<section path>/]…`
    (either scheme; no port). `current` is the site the caller has already loaded (the reader,
    which found it by the Host header)."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:  # e.g. a malformed IPv6 host or port: no published content is there
        return None
    base = urlsplit(public)
    prefix = base.path.rstrip("/")
    if (parts.scheme, parts.netloc) == (base.scheme, base.netloc):
        if not parts.path.startswith(f"{prefix}/"):
            return None
        segments = [s for s in parts.path[len(prefix) :].split("/") if s]
        if len(segments) < 2:
            return None
        if current is None:
            current = await load(conn, segments=(segments[0], segments[1]))
        rest = segments[2:]
        site_base = f"{prefix}/{segments[0]}/{segments[1]}/"
    elif (
        parts.scheme in ("http", "https")
        and parts.hostname
        and port is None
        and parts.netloc.lower() == parts.hostname
    ):
        # A site's custom hostname: the site at the host's root.
        if current is None:
            current = await load(conn, hostname=parts.hostname)
        if current is None or current.site["hostname"] != parts.hostname:
            return None
        rest = [s for s in parts.path.split("/") if s]
        site_base = "/"
    else:
        return None
    if current is None:
        return None
    site = current.site
    query = parse_qs(parts.query)
    share_key = who.share_key or next(iter(query.get("shareKey", [])), None)
    if (
        share_key is None
        and rest
        and site["visibility"] == "share-link"
        and await repository.active_share_link(conn, site["id"], rest[0]) is not None
    ):
        # GitBook's form of a share link's address: the key as the segment after the site's.
        share_key = rest[0]
        rest = rest[1:]
        site_base += f"{share_key}/"
    who = Visitor(share_key=share_key, token=who.token, unsigned=who.unsigned, kind=who.kind)
    user_id = await member(site["organization_id"]) if member is not None else None
    if user_id is not None:
        access = await ContentScope.load(conn, site["organization_id"], user_id)
        # Full members, as the site API's `can_view` has it: a guest reads as a visitor.
        if access.is_member and access.org_role is not None:
            opened = await open_for_member(conn, site, access, base_url, public, current)
            found = await _locate(conn, site, opened, rest, site_base, public, who, require_page)
            if found is not None:
                return found
    seen = await open_for_visitor(conn, site, who, base_url, public, current)
    if seen is None:
        fallback = site["fallback_url"]
        if (
            redirect_on_error
            and fallback
            and site["published"]
            and site["visibility"] == "visitor-auth"
        ):
            return Lookup({"target": "external", "redirect": fallback})
        return None
    return await _locate(conn, site, seen, rest, site_base, public, who, require_page)


async def _locate(
    conn: AsyncConnection,
    site: Row,
    opened: Opened,
    rest: list[str],
    site_base: str,
    public: str,
    who: Visitor,
    require_page: bool = True,
) -> Lookup | None:
    """The lookup of the address segments `rest` (after the site's own) in what `opened`
    shows, or None when they lead nowhere there."""
    base = urlsplit(public)
    shown = opened.view
    base_path = site_base
    section: Row | None = None
    # GitBook's `complete`: no further site path segment (a section's, a variant's) can follow,
    # because each was named or there was no choice. A look-up that fell back to a default is
    # not, so that a client trying shorter forms of a URL keeps the longest one.
    complete = True
    if shown.sections:
        section = next((s for s in shown.sections if rest and s["path"] == rest[0]), None)
        if section is not None:
            rest = rest[1:]
            base_path += f"{section['path']}/"
        else:
            # The default section, or the first one shown when the default is not.
            section = next((s for s in shown.sections if s["is_default"]), shown.sections[0])
            complete = len(shown.sections) <= 1
    key = section["id"] if section is not None else ""
    siblings = [ss for ss in shown.site_spaces if ss["section_key"] == key]
    site_space = next((ss for ss in siblings if rest and ss["path"] == rest[0]), None)
    if site_space is not None:
        rest = rest[1:]
        base_path += f"{site_space['path']}/"
    else:
        complete = complete and len(siblings) <= 1
        site_space = next((ss for ss in siblings if ss["is_default"]), None)
        if site_space is None and siblings:
            # The default variant is not shown to this reader: the first one that is.
            site_space = siblings[0]
    if site_space is None:
        return None
    space = shown.spaces[site_space["space_id"]]
    page = await _page(conn, space, rest, opened.scope)
    if page is None and rest and require_page:
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
        # Minted for GitBook's look-up, whose client reads with it; the reader needs none.
        "apiToken": (
            "" if require_page else await _site_token(conn, site, opened, site_space, section, who)
        ),
        "organization": site["organization_id"],
        "complete": complete,
        "canonicalUrl": _canonical(site, public, base_path[len(site_base) :] + pathname)
        or f"{base.scheme}://{base.netloc}{base_path}{pathname}",
    }
    if section is not None:
        body["siteSection"] = section["id"]
    if page is not None:
        body["page"] = page
    if opened.share_key is not None:
        body["shareKey"] = opened.share_key
    return Lookup(body, opened)
