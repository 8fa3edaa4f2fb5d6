"""Site rights follow from the caller's organization role; the same functions guard the
endpoints and fill `Site.permissions`. Guests and non-members see no site (404); full members
read them; `create` and above build them (structure, titles); organization admins administer
them (publishing, visibility, addresses, deletion, share links)."""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa

from docshelf.authz.guard import not_found
from docshelf.authz.roles import at_least
from docshelf.kit.context import Ctx
from docshelf.organization import policy as org_policy
from docshelf.organization.policy import OrgAccess
from docshelf.site import repository


@dataclass(frozen=True, slots=True)
class SiteAccess:
    site: sa.RowMapping
    org: OrgAccess

    @property
    def id(self) -> str:
        return str(self.site["id"])

    @property
    def org_id(self) -> str:
        return self.org.id


def can_view(a: OrgAccess) -> bool:
    return org_policy.is_full_member(a)


def can_edit(a: OrgAccess) -> bool:
    return can_view(a) and at_least(a.role, "create")


def can_admin(a: OrgAccess) -> bool:
    return org_policy.is_admin(a)


def permissions(a: OrgAccess) -> dict[str, bool]:
    return {
        "view": can_view(a),
        "access": can_view(a),
        "edit": can_edit(a),
        "create": can_edit(a),
        "admin": can_admin(a),
        "installIntegration": can_admin(a),
        "viewAdaptiveSchema": can_view(a),
        "editAdaptiveSchema": can_admin(a),
    }


async def load_org(ctx: Ctx, org_id: str) -> OrgAccess:
    """The organization, for a caller who may see its sites: guests get the 404 of a missing
    organization's sites."""
    access = await org_policy.load(ctx, org_id)
    if not can_view(access):
        not_found("Organization")
    return access


async def load(ctx: Ctx, org_id: str, site_id: str, *, lock: bool = False) -> SiteAccess:
    """The site as the caller sees it: 404 unless they may view it. `lock` takes the site row
    for update (PostgreSQL; SQLite writers are serialised already), which serialises every
    writer of the site's structure, so the default and path invariants hold under concurrency."""
    org = await org_policy.load(ctx, org_id)
    if not can_view(org):
        not_found("Site")
    row = await repository.get_site(ctx.conn, site_id, org_id, lock=lock)
    if row is None:
        not_found("Site")
    return SiteAccess(site=row, org=org)


def hostname_allowed(allowed: str, org_id: str, hostname: str) -> bool:
    """Whether DOCSHELF_CUSTOM_HOSTNAMES (`allowed`: a comma list of `pattern` or
    `organizationId=pattern`; a pattern is a hostname, `*.domain` or `*`) lets the organization
    give a site `hostname`."""
    for entry in allowed.split(","):
        owner, _, pattern = entry.strip().rpartition("=")
        pattern = pattern.strip().lower()
        if not pattern or (owner and owner.strip() != org_id):
            continue
        if pattern == "*" or pattern == hostname:
            return True
        if pattern.startswith("*.") and hostname.endswith(pattern[1:]):
            return True
    return False
