"""Collection rights follow from the caller's effective role (authz.content)."""

from __future__ import annotations

from docshelf.authz.content import ContentAccess, ContentScope
from docshelf.authz.guard import not_found
from docshelf.authz.roles import at_least
from docshelf.collection import repository
from docshelf.kit.context import Ctx


def permissions(role: str | None) -> dict[str, bool]:
    return {
        "view": can_view(role),
        "admin": can_admin(role),
        "viewInviteLinks": can_admin(role),
        "create": can_create_in(role),
    }


def can_view(role: str | None) -> bool:
    return at_least(role, "read")


def can_admin(role: str | None) -> bool:
    return at_least(role, "admin")


def can_create_in(role: str | None) -> bool:
    return at_least(role, "create")


CollectionAccess = ContentAccess


async def load(ctx: Ctx, collection_id: str, *, org_id: str | None = None) -> CollectionAccess:
    """The collection as the caller sees it: 404 unless they have at least read on it."""
    row = await repository.get(ctx.conn, collection_id)
    if row is None or (org_id is not None and row["organization_id"] != org_id):
        not_found("Collection")
    scope = await ContentScope.near(
        ctx.conn, row["organization_id"], ctx.actor.user_id, collection_id
    )
    role = scope.collection_role(collection_id)
    if not can_view(role):
        not_found("Collection")
    return CollectionAccess(row=row, scope=scope, role=role)
