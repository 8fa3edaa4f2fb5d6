"""Wire shapes of sites, sections, section groups and site spaces. One `SiteView` (the site's
whole structure, read once) presents every part of it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast
from urllib.parse import quote, urlsplit

from sqlalchemy import RowMapping

from docshelf.authz.content import ContentScope
from docshelf.kit.clock import isoformat
from docshelf.kit.context import Ctx
from docshelf.organization.policy import OrgAccess
from docshelf.site import policy
from docshelf.space.presenter import present_space

# A row as read (sa.RowMapping), or as kept by the published look-up (a dict).
Row = Mapping[Any, Any]


def public_base(ctx: Ctx) -> str:
    """Where published sites live (DOCSHELF_PUBLIC_URL, else the base URL)."""
    settings = getattr(ctx.state, "settings", None)
    return settings.resolved_public_url if settings is not None else ctx.base_url


def site_origin(site: Row, public: str) -> str | None:
    """Where a site with a custom hostname is served: that host at its root, with the scheme of
    DOCSHELF_PUBLIC_URL (a TLS-terminating proxy in front of both is the expected setup)."""
    hostname = site["hostname"]
    if not hostname:
        return None
    return f"{urlsplit(public).scheme}://{hostname}"


def site_address(site: Row, public: str) -> str:
    """The site's public address, whether or not it is published: its custom hostname's root,
    else the organization's hostname (or id), then the site's basename (or id)."""
    origin = site_origin(site, public)
    if origin is not None:
        return f"{origin}/"
    org = site["org_hostname"] or site["organization_id"]
    return f"{public}/{org}/{site['basename'] or site['id']}/"


def shared(address: str, share_key: str) -> str:
    """An address opened with a share link's key."""
    return f"{address}?shareKey={quote(share_key, safe='')}"


def _features(site: Row) -> list[dict[str, Any]]:
    """The features the site's data uses, each on the site's plan."""
    keys = {
        "public": "sites-public-visibility",
        "unlisted": "sites-unlisted-visibility",
        "share-link": "sites-share-links",
        "visitor-auth": "sites-visitor-authentication",
    }
    used = [keys[site["visibility"]]]
    if site["has_sections"]:
        used.append("sites-sections")
    if site["multivariant"]:
        used.append("sites-multivariant-site")
    if site["adaptive_content"]:
        used.append("sites-adaptive-content")
    if site["proxy"]:
        used.append("sites-custom-subdirectory")
    return [{"id": key, "plan": site["type"], "frozen": False} for key in sorted(used)]


def present_site(
    site: Row, org: OrgAccess, base_url: str, public: str, share_key: str | None = None
) -> dict[str, Any]:
    """`share_key`: an active share link's key, carried by the published URL (SiteView's)."""
    sid = site["id"]
    oid = site["organization_id"]
    urls = {
        "location": f"{base_url}/v1/orgs/{oid}/sites/{sid}",
        "app": f"{base_url}/o/{oid}/sites/{sid}/",
    }
    address = site_address(site, public)
    # GitBook 0.202 requires `preview`; Docshelf has no preview deployments, so it is the
    # address the site is (or, once published, will be) served at.
    urls["preview"] = address
    if site["published"]:
        urls["published"] = address if share_key is None else shared(address, share_key)
    body: dict[str, Any] = {
        "object": "site",
        "id": sid,
        "type": site["type"],
        # No plan ever freezes a Docshelf site: the type applied is the type chosen.
        "appliedType": site["type"],
        "title": site["title"],
        "visibility": site["visibility"],
        "published": site["published"],
        "siteSpaces": site["site_space_count"],
        "createdAt": isoformat(site["created_at"]),
        "adaptiveContent": {"enabled": site["adaptive_content"]},
        # Sites keep no default level of their own: members' access comes from the content.
        "defaultLevel": "inherit",
        # GitBook 0.130 requires both: no agent reads a Docshelf site, and `defaultSpace` (never
        # defined by GitBook) is the space its default site space shows.
        "agentsContext": "excluded",
        "defaultSpace": site["default_space_id"],
        "features": _features(site),
        "urls": urls,
        "permissions": policy.permissions(org),
    }
    if site["basename"] is not None:
        body["basename"] = site["basename"]
    if site["hostname"] is not None:
        body["hostname"] = site["hostname"]
    if site["proxy"] is not None:
        body["proxy"] = {"origin": site["proxy"], "target": address}
    return body


@dataclass
class SiteView:
    site: Row
    sections: Sequence[Row]
    groups: Sequence[Row]
    site_spaces: Sequence[Row]
    spaces: Mapping[str, Row]
    scope: ContentScope
    base_url: str
    public: str
    # An active share link's key for a share-link site: its published URLs carry it, so that
    # they open for whoever is given them (the spec's `shareKey` query parameter).
    share_key: str | None = None
    _by_section: dict[str, list[Row]] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        for ss in self.site_spaces:
            self._by_section.setdefault(ss["section_key"], []).append(ss)

    def published_url(self, section: Row | None, site_space: Row | None = None) -> str:
        url = site_address(self.site, self.public)
        if section is not None and not section["is_default"]:
            url += f"{section['path']}/"
        if site_space is not None and not site_space["is_default"]:
            url += f"{site_space['path']}/"
        return url if self.share_key is None else shared(url, self.share_key)

    def location(self, kind: str, item_id: str) -> str:
        site = self.site
        return (
            f"{self.base_url}/v1/orgs/{site['organization_id']}/sites/{site['id']}/{kind}/{item_id}"
        )

    def site_space(self, ss: Row) -> dict[str, Any]:
        space = self.spaces[ss["space_id"]]
        section = next((s for s in self.sections if s["id"] == ss["section_id"]), None)
        # GitBook 0.130 requires `location` (it serves no GET there; nor do we).
        urls = {"location": self.location("site-spaces", ss["id"])}
        if self.site["published"]:
            urls["published"] = self.published_url(section, ss)
        body: dict[str, Any] = {
            "object": "site-space",
            "id": ss["id"],
            "path": ss["path"],
            "title": space["title"],
            # A kept row is a dict; present_space only reads it by key.
            "space": present_space(
                cast(RowMapping, space), self.scope.space_role(space), self.base_url
            ),
            "default": ss["is_default"],
            "draft": False,
            "hasAdvancedCustomizationFeature": False,
            "urls": urls,
        }
        if ss["section_id"] is not None:
            body["section"] = ss["section_id"]
        if ss["condition"] is not None:
            body["condition"] = ss["condition"]
        if ss["hidden"]:
            body["hidden"] = True
        return body

    def section(self, section: Row) -> dict[str, Any]:
        urls = {"location": self.location("sections", section["id"])}
        if self.site["published"]:
            urls["published"] = self.published_url(section)
        body: dict[str, Any] = {
            "object": "site-section",
            "id": section["id"],
            "title": section["title"],
            "path": section["path"],
            "default": section["is_default"],
            "draft": False,
            "siteSpaces": [self.site_space(ss) for ss in self._by_section.get(section["id"], [])],
            "urls": urls,
        }
        for key, name in (
            ("description", "description"),
            ("condition", "condition"),
            ("icon", "icon"),
            ("group_id", "sectionGroup"),
        ):
            if section[key] is not None:
                body[name] = section[key]
        return body

    def group(self, group: Row) -> dict[str, Any]:
        body: dict[str, Any] = {
            "object": "site-section-group",
            "id": group["id"],
            "title": group["title"],
            "draft": False,
            "sections": [self.section(s) for s in self.sections if s["group_id"] == group["id"]],
        }
        # 0.202's `children` holds the same sections (Docshelf groups do not nest).
        body["children"] = body["sections"]
        if group["icon"] is not None:
            body["icon"] = group["icon"]
        return body

    def structure(self) -> dict[str, Any]:
        """GitBook's `SiteStructure`: sections and groups in their order, or, for a site
        without sections, its site spaces."""
        if not self.sections:
            return {
                "type": "siteSpaces",
                "structure": [self.site_space(ss) for ss in self._by_section.get("", [])],
            }
        top = [("section", s) for s in self.sections if s["group_id"] is None]
        top += [("group", g) for g in self.groups]
        top.sort(key=lambda item: (item[1]["position"], item[1]["id"]))
        return {
            "type": "sections",
            "structure": [
                self.section(row) if kind == "section" else self.group(row) for kind, row in top
            ],
        }
