"""Every non-guest member reads the organization's custom fields; admins define them."""

from __future__ import annotations

from docshelf.organization.policy import OrgAccess, is_admin, is_full_member


def can_view(a: OrgAccess) -> bool:
    return is_full_member(a)


def can_create(a: OrgAccess) -> bool:
    return is_admin(a)


def can_edit(a: OrgAccess) -> bool:
    """Change or delete the field."""
    return is_admin(a)


def permissions(a: OrgAccess) -> dict[str, bool]:
    return {"view": can_view(a), "edit": can_edit(a)}
