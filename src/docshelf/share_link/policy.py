"""Share links are credentials to a site: only the organization's admins (who administer its
sites) list or manage them; other members who see the site get 403, everyone else 404."""

from __future__ import annotations

from docshelf.authz.guard import require
from docshelf.kit.context import Ctx
from docshelf.site import policy as site_policy
from docshelf.site.policy import SiteAccess


def can_manage(access: SiteAccess) -> bool:
    return site_policy.can_admin(access.org)


async def manage(ctx: Ctx, org_id: str, site_id: str, *, lock: bool = False) -> SiteAccess:
    access = await site_policy.load(ctx, org_id, site_id, lock=lock)
    require(can_manage(access), "Only organization admins can manage a site's share links")
    return access
