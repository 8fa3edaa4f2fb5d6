"""Space rights follow from the caller's effective role (authz.content); the same functions
guard the endpoints and fill `Space.permissions`."""

from __future__ import annotations

import hmac

from docshelf.authz.content import ContentAccess, ContentScope
from docshelf.authz.guard import not_found
from docshelf.authz.roles import at_least
from docshelf.kit.context import Ctx
from docshelf.space import repository


def can_view(role: str | None) -> bool:
    return at_least(role, "read")


def can_admin(role: str | None) -> bool:
    return at_least(role, "admin")


def can_edit_content(role: str | None, edit_mode: str | None) -> bool:
    return at_least(role, "edit") and edit_mode != "locked"


def can_comment(role: str | None) -> bool:
    return at_least(role, "comment")


def can_review(role: str | None) -> bool:
    return at_least(role, "review")


def permissions(role: str | None, edit_mode: str | None) -> dict[str, bool]:
    return {
        "view": can_view(role),
        "access": can_view(role),
        "admin": can_admin(role),
        "viewInviteLinks": can_admin(role),
        "edit": can_edit_content(role, edit_mode),
        "triggerGitSync": can_edit_content(role, edit_mode),
        "comment": can_comment(role),
        "merge": can_review(role),
        "review": can_review(role),
        "installIntegration": can_admin(role),
    }


SpaceAccess = ContentAccess


async def load(
    ctx: Ctx,
    space_id: str,
    *,
    deleted: bool = False,
    share_key: str | None = None,
    role_only: bool = False,
) -> SpaceAccess:
    """The space as the caller sees it: 404 unless they may read it. A deleted space is seen
    only by its admins, and only where `deleted` asks for it (GET, restore). `role_only`: the
    caller uses the row and the role, not the scope (an organization admin's scope then stays
    empty, which saves the collection read: see ARCHITECTURE.md, "A request")."""
    row = await repository.get_with_membership(ctx.conn, space_id, ctx.actor.user_id)
    if row is None:
        not_found("Space")
    scope = await ContentScope.near_known(
        ctx.conn,
        row["organization_id"],
        ctx.actor.user_id,
        row["parent_id"],
        is_member=row["caller_member"] is not None,
        org_role=row["caller_role"],
        grants=row["caller_grants"],
        role_only=role_only,
    )
    role = scope.space_role(row)
    reads = ctx.actor.reads
    if role is None and reads is not None and space_id in reads.spaces:
        # A site content token reads the spaces its site shows the visitor (auth.site_token).
        role = "read"
    if (
        share_key is not None
        and role is None
        and row["visibility"] == "share-link"
        and row["share_key"] is not None
        and _same(share_key, row["share_key"])
    ):
        role = "read"
    if not can_view(role):
        not_found("Space")
    if row["deleted_at"] is not None and not (deleted and can_admin(role)):
        not_found("Space")
    return SpaceAccess(row=row, scope=scope, role=role)


def _same(given: str, stored: str) -> bool:
    return hmac.compare_digest(given.encode(), stored.encode())
