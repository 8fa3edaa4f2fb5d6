from __future__ import annotations

from docshelf.organization.policy import OrgAccess, is_admin


def can_view_links(a: OrgAccess) -> bool:
    return is_admin(a)


def can_manage_links(a: OrgAccess) -> bool:
    return is_admin(a)
