"""SAML providers configure who can log in to the organization and with which role: only admins
see or change them. Any member may list the active providers' login links (what a login page
shows), which carry no configuration."""

from __future__ import annotations

from docshelf.organization.policy import OrgAccess, can_view, is_admin


def can_manage(a: OrgAccess) -> bool:
    return is_admin(a)


def can_list_logins(a: OrgAccess) -> bool:
    return can_view(a)
