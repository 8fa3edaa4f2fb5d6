"""Organization-level rights, from the caller's membership role. The same functions guard the
endpoints and fill `Organization.permissions`."""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from docshelf.authz.content import ContentScope, caller_grants
from docshelf.authz.guard import not_found
from docshelf.authz.roles import at_least
from docshelf.kit.context import Ctx
from docshelf.kit.sql import Row
from docshelf.models import members, organizations
from docshelf.organization.repository import ORG_COLUMNS, owns_team_column


@dataclass(frozen=True, slots=True)
class OrgAccess:
    org: Row
    is_member: bool
    role: str | None
    owns_team: bool = False

    @property
    def id(self) -> str:
        return str(self.org["id"])


def can_view(a: OrgAccess) -> bool:
    return a.is_member


def is_admin(a: OrgAccess) -> bool:
    return a.is_member and a.role == "admin"


def is_full_member(a: OrgAccess) -> bool:
    """Guests (a null role) only see what is shared with them: not the member or team lists."""
    return a.is_member and a.role is not None


# Organization-wide configuration (custom fields, translation settings): every full member
# reads it, only admins create, change or delete it.


def can_view_setting(a: OrgAccess) -> bool:
    return is_full_member(a)


def can_change_setting(a: OrgAccess) -> bool:
    return is_admin(a)


def setting_permissions(a: OrgAccess) -> dict[str, bool]:
    return {"view": can_view_setting(a), "edit": can_change_setting(a)}


def can_create_content(a: OrgAccess) -> bool:
    return a.is_member and at_least(a.role, "create")


def permissions(a: OrgAccess) -> dict[str, bool]:
    admin = is_admin(a)
    full = is_full_member(a)
    return {
        "view": can_view(a),
        "access": can_view(a),
        "admin": admin,
        # GitBook: "is the user a team owner"; admins own every team.
        "ownTeam": admin or (a.is_member and a.owns_team),
        "createContent": can_create_content(a),
        "createOpenAPISpec": can_create_content(a),
        # Present in GitBook 0.130 (the spec's era): feeding conversations to AI is content
        # creation.
        "ingestConversations": can_create_content(a),
        "viewBilling": admin,
        "listMembers": full,
        "listTeams": full,
        "listIntegrations": full,
        "listInstallations": admin,
        "installIntegration": admin,
    }


def _visible_stmt(for_update: bool) -> sa.Select[tuple[object, ...]]:
    stmt = (
        sa.select(
            *ORG_COLUMNS,
            members.c.role.label("caller_role"),
            owns_team_column(),
            caller_grants(organizations.c.id, members.c.user_id, members.c.role).label(
                "caller_grants"
            ),
        )
        .select_from(organizations)
        .join(
            members,
            sa.and_(
                members.c.organization_id == organizations.c.id,
                members.c.user_id == sa.bindparam("uid"),
            ),
        )
        .where(organizations.c.id == sa.bindparam("oid"))
    )
    # Serialises writers that check an organization-wide invariant (the last admin) on
    # PostgreSQL; SQLite writers are already serialised by BEGIN IMMEDIATE.
    # The caller's member row is locked too, so a role changed meanwhile is re-read.
    return stmt.with_for_update(of=[organizations, members]) if for_update else stmt


_VISIBLE = _visible_stmt(False)
_VISIBLE_LOCKED = _visible_stmt(True)


async def load(ctx: Ctx, org_id: str, *, lock: bool = False) -> OrgAccess:
    """The organization as the caller sees it: a non-member gets the 404 a missing one gets."""
    return await load_for(ctx.conn, ctx.actor.user_id, org_id, lock=lock)


async def load_for(
    conn: AsyncConnection, user_id: str, org_id: str, *, lock: bool = False
) -> OrgAccess:
    params = {"uid": user_id, "oid": org_id}
    stmt = _VISIBLE_LOCKED if lock else _VISIBLE
    row: Row | None = (await conn.execute(stmt, params)).mappings().first()
    if row is None:
        not_found("Organization")
    return OrgAccess(org=row, is_member=True, role=row["caller_role"], owns_team=row["owns_team"])


async def content_scope(ctx: Ctx, access: OrgAccess) -> ContentScope:
    """The caller's ContentScope (with the whole collection tree) in an organization `load`
    already read: the caller's role and grants come with it."""
    return await ContentScope.load_known(
        ctx.conn,
        access.id,
        ctx.actor.user_id,
        is_member=access.is_member,
        org_role=access.role,
        # A member's access comes from `load`, which reads their grants (a KeyError otherwise,
        # rather than a member without them); one built elsewhere is a visitor's.
        grants=access.org["caller_grants"] if access.is_member else None,
    )
