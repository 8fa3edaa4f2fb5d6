"""The audit log says who did what across the organization: its admins read it."""

from __future__ import annotations

from docshelf.organization.policy import OrgAccess, is_admin


def can_read(a: OrgAccess) -> bool:
    return is_admin(a)
