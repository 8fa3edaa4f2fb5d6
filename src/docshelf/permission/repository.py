from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from docshelf.kit.db import upsert_insert
from docshelf.models import content_grants, members, team_members, teams, users
from docshelf.team.repository import team_columns


def _target(kind: str, target_id: str) -> sa.ColumnElement[bool]:
    return sa.and_(content_grants.c.target_type == kind, content_grants.c.target_id == target_id)


def user_grants(kind: str, target_id: str) -> sa.Select[Any]:
    return (
        sa.select(
            content_grants.c.role,
            content_grants.c.principal_id,
            users.c.id,
            users.c.email,
            users.c.display_name,
            users.c.photo_url,
        )
        .join(users, users.c.id == content_grants.c.principal_id)
        .where(_target(kind, target_id), content_grants.c.principal_type == "user")
    )


def team_grants(kind: str, target_id: str, caller_id: str) -> sa.Select[Any]:
    return (
        sa.select(content_grants.c.role, content_grants.c.principal_id, *team_columns(caller_id))
        .join(teams, teams.c.id == content_grants.c.principal_id)
        .where(_target(kind, target_id), content_grants.c.principal_type == "team")
    )


async def upsert(
    conn: AsyncConnection,
    *,
    org_id: str,
    kind: str,
    target_id: str,
    principal: tuple[str, str],
    role: str,
    now: datetime,
) -> None:
    stmt = upsert_insert(conn.dialect.name, content_grants).values(
        organization_id=org_id,
        target_type=kind,
        target_id=target_id,
        principal_type=principal[0],
        principal_id=principal[1],
        role=role,
        created_at=now,
    )
    await conn.execute(
        stmt.on_conflict_do_update(
            index_elements=["target_type", "target_id", "principal_type", "principal_id"],
            set_={"role": role},
        )
    )


async def set_role(
    conn: AsyncConnection, kind: str, target_id: str, principal: tuple[str, str], role: str
) -> bool:
    result = await conn.execute(
        sa.update(content_grants)
        .where(
            _target(kind, target_id),
            content_grants.c.principal_type == principal[0],
            content_grants.c.principal_id == principal[1],
        )
        .values(role=role)
    )
    return result.rowcount > 0


async def remove(
    conn: AsyncConnection, kind: str, target_id: str, principals: list[tuple[str, str]]
) -> int:
    removed = 0
    for ptype, pid in principals:
        result = await conn.execute(
            sa.delete(content_grants).where(
                _target(kind, target_id),
                content_grants.c.principal_type == ptype,
                content_grants.c.principal_id == pid,
            )
        )
        removed += result.rowcount
    return removed


async def org_member_ids(conn: AsyncConnection, org_id: str, ids: list[str]) -> set[str]:
    """The members among `ids`, their rows locked until commit on PostgreSQL: a removal running
    at the same time then either finishes first (and the grant is refused) or waits for the
    grant and deletes it with the member, so no grant outlives its member."""
    stmt = sa.select(members.c.user_id).where(
        members.c.organization_id == org_id, members.c.user_id.in_(ids)
    )
    if conn.dialect.name == "postgresql":
        stmt = stmt.order_by(members.c.user_id).with_for_update()
    return set((await conn.execute(stmt)).scalars())


async def org_team_ids(conn: AsyncConnection, org_id: str, ids: list[str]) -> set[str]:
    stmt = sa.select(teams.c.id).where(teams.c.organization_id == org_id, teams.c.id.in_(ids))
    return set((await conn.execute(stmt)).scalars())


async def members_with_grants(
    conn: AsyncConnection, org_id: str
) -> tuple[list[sa.RowMapping], dict[str, list[Any]]]:
    """Every member of the organization (with their user) and, per user, the grants they hold
    directly or through teams: what `aggregate` needs to resolve everyone's role at once."""
    rows = (
        (
            await conn.execute(
                sa.select(
                    members.c.user_id,
                    members.c.role,
                    users.c.id,
                    users.c.email,
                    users.c.display_name,
                    users.c.photo_url,
                )
                .join(users, users.c.id == members.c.user_id)
                .where(members.c.organization_id == org_id)
                .order_by(members.c.user_id)
            )
        )
        .mappings()
        .all()
    )
    direct = await conn.execute(
        sa.select(
            content_grants.c.principal_id,
            content_grants.c.target_type,
            content_grants.c.target_id,
            content_grants.c.role,
        ).where(
            content_grants.c.organization_id == org_id, content_grants.c.principal_type == "user"
        )
    )
    by_user: dict[str, list[Any]] = {}
    for g in direct:
        by_user.setdefault(g.principal_id, []).append((g.target_type, g.target_id, g.role))
    via_team = await conn.execute(
        sa.select(
            team_members.c.user_id,
            content_grants.c.target_type,
            content_grants.c.target_id,
            content_grants.c.role,
        )
        .join(
            content_grants,
            sa.and_(
                content_grants.c.principal_type == "team",
                content_grants.c.principal_id == team_members.c.team_id,
            ),
        )
        .where(team_members.c.organization_id == org_id)
    )
    for g in via_team:
        by_user.setdefault(g.user_id, []).append((g.target_type, g.target_id, g.role))
    return list(rows), by_user


async def make_creator_admin(
    conn: AsyncConnection, *, org_id: str, kind: str, target_id: str, user_id: str, now: datetime
) -> None:
    """Whoever creates content (or a copy) administers it, even where the organization gives
    them less. Callers skip organization admins, who already are."""
    await upsert(
        conn,
        org_id=org_id,
        kind=kind,
        target_id=target_id,
        principal=("user", user_id),
        role="admin",
        now=now,
    )


async def user_grant(conn: AsyncConnection, kind: str, target_id: str, user_id: str) -> str | None:
    stmt = sa.select(content_grants.c.role).where(
        _target(kind, target_id),
        content_grants.c.principal_type == "user",
        content_grants.c.principal_id == user_id,
    )
    return (await conn.execute(stmt)).scalar_one_or_none()
