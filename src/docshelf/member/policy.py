from __future__ import annotations

from docshelf.organization.policy import OrgAccess, is_admin, is_full_member


def can_list(a: OrgAccess) -> bool:
    return is_full_member(a)


def can_view_member(a: OrgAccess, user_id: str, actor_id: str) -> bool:
    return is_full_member(a) or (a.is_member and user_id == actor_id)


def can_manage(a: OrgAccess) -> bool:
    return is_admin(a)


def can_remove(a: OrgAccess, user_id: str, actor_id: str) -> bool:
    # Anyone may leave; only admins remove others.
    return is_admin(a) or (a.is_member and user_id == actor_id)
