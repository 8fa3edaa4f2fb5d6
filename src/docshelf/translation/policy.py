"""Translation settings are organization-wide configuration: every full member reads them (guests
only see what is shared with them), only admins change them."""

from __future__ import annotations

from docshelf.organization.policy import OrgAccess, is_admin, is_full_member


def can_view(a: OrgAccess) -> bool:
    return is_full_member(a)


def can_create(a: OrgAccess) -> bool:
    return is_admin(a)


def can_edit(a: OrgAccess) -> bool:
    """Replace or delete translation settings."""
    return is_admin(a)


def permissions(a: OrgAccess) -> dict[str, bool]:
    return {"view": can_view(a), "edit": can_edit(a)}
