"""Admins manage every team; a team's owners manage that team's members."""

from __future__ import annotations

from docshelf.organization.policy import OrgAccess, is_admin, is_full_member


def can_list(a: OrgAccess) -> bool:
    return is_full_member(a)


def can_view(a: OrgAccess, caller_team_role: str | None = None) -> bool:
    """Members see teams; a guest sees only the teams they own (and so manage)."""
    return is_full_member(a) or (a.is_member and caller_team_role == "owner")


def can_create(a: OrgAccess) -> bool:
    return is_admin(a)


def can_edit(a: OrgAccess) -> bool:
    """Rename or delete the team."""
    return is_admin(a)


def can_manage_members(a: OrgAccess, caller_team_role: str | None) -> bool:
    return is_admin(a) or (a.is_member and caller_team_role == "owner")


def permissions(a: OrgAccess, caller_team_role: str | None) -> dict[str, bool]:
    return {
        "admin": can_manage_members(a, caller_team_role),
        "view": can_view(a, caller_team_role),
    }
