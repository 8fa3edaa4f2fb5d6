"""Who may do what with an organization's OpenAPI specs. Every full member reads them (guests only
see what is shared with them); creating, replacing and deleting take the right to create
content, the same right `Organization.permissions.createOpenAPISpec` reports."""

from __future__ import annotations

from docshelf.organization.policy import OrgAccess, can_create_content, is_full_member


def can_view(a: OrgAccess) -> bool:
    return is_full_member(a)


def can_edit(a: OrgAccess) -> bool:
    """Create, replace the source of, or delete a spec."""
    return can_create_content(a)


def permissions(a: OrgAccess) -> dict[str, bool]:
    # GitBook 0.130 requires `delete` beside the two properties it describes.
    return {"view": can_view(a), "edit": can_edit(a), "delete": can_edit(a)}
