"""Webhooks send an organization's events out of the install: its admins manage them."""

from __future__ import annotations

from docshelf.organization.policy import OrgAccess, is_admin


def can_manage(a: OrgAccess) -> bool:
    return is_admin(a)
