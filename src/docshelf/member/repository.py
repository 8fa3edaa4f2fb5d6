from __future__ import annotations

import functools
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from docshelf.kit.sql import contains_pattern, like_ci
from docshelf.models import content_grants, members, spaces, team_members, users

_teams_count = (
    sa.select(sa.func.count())
    .where(
        team_members.c.organization_id == members.c.organization_id,
        team_members.c.user_id == members.c.user_id,
    )
    .correlate(members)
    .scalar_subquery()
)

# Spaces granted to the member directly (GitBook's Member.spaces); access that flows from the
# organization role is not counted, or every member of an open organization would count all.
_spaces_count = (
    sa.select(sa.func.count())
    .select_from(content_grants.join(spaces, spaces.c.id == content_grants.c.target_id))
    .where(
        content_grants.c.organization_id == members.c.organization_id,
        content_grants.c.target_type == "space",
        content_grants.c.principal_type == "user",
        content_grants.c.principal_id == members.c.user_id,
        spaces.c.deleted_at.is_(None),
    )
    .correlate(members)
    .scalar_subquery()
)

MEMBER_COLUMNS = (
    members.c.organization_id,
    members.c.user_id,
    members.c.role,
    members.c.joined_at,
    members.c.last_seen_at,
    members.c.sso,
    members.c.disabled,
    users.c.email.label("user_email"),
    users.c.display_name.label("user_display_name"),
    users.c.photo_url.label("user_photo_url"),
    _teams_count.label("teams_count"),
    _spaces_count.label("spaces_count"),
)


def in_organization(org_id: str | sa.BindParameter[str]) -> sa.Select[Any]:
    return (
        sa.select(*MEMBER_COLUMNS)
        .join(users, users.c.id == members.c.user_id)
        .where(members.c.organization_id == org_id)
    )


def listing(
    org_id: str, *, role: str | None, search: str | None, seen: bool
) -> tuple[sa.Select[Any], dict[str, Any]]:
    """An organization's members, filtered by role ("guest": no role), by a substring of their
    name or e-mail, and to those seen once (`seen`), with the statement's parameters: built
    once per kind of filter."""
    values = {"org_id": org_id, "role": role, "needle": contains_pattern(search or "")}
    return _listing(role is None, role == "guest", bool(search), seen), values


@functools.lru_cache(maxsize=16)
def _listing(any_role: bool, guests: bool, searched: bool, seen: bool) -> sa.Select[Any]:
    stmt = in_organization(sa.bindparam("org_id"))
    if guests:
        stmt = stmt.where(members.c.role.is_(None))
    elif not any_role:
        stmt = stmt.where(members.c.role == sa.bindparam("role"))
    if searched:
        stmt = stmt.where(
            sa.or_(like_ci(users.c.display_name, "needle"), like_ci(users.c.email, "needle"))
        )
    if seen:
        stmt = stmt.where(members.c.last_seen_at.is_not(None))
    return stmt


# Built once, with its cache key: most routes of an organization's members read one.
_MEMBER = in_organization(sa.bindparam("org_id")).where(
    members.c.user_id == sa.bindparam("user_id")
)


async def get(conn: AsyncConnection, org_id: str, user_id: str) -> sa.RowMapping | None:
    values = {"org_id": org_id, "user_id": user_id}
    return (await conn.execute(_MEMBER, values)).mappings().first()


async def insert(
    conn: AsyncConnection, *, org_id: str, user_id: str, role: str | None, now: datetime
) -> None:
    await conn.execute(
        sa.insert(members).values(organization_id=org_id, user_id=user_id, role=role, joined_at=now)
    )


async def update(conn: AsyncConnection, org_id: str, user_id: str, values: dict[str, Any]) -> None:
    await conn.execute(
        sa.update(members)
        .where(members.c.organization_id == org_id, members.c.user_id == user_id)
        .values(**values)
    )


async def delete(conn: AsyncConnection, org_id: str, user_id: str) -> None:
    await conn.execute(
        sa.delete(team_members).where(
            team_members.c.organization_id == org_id, team_members.c.user_id == user_id
        )
    )
    # Grants go too: a removed member loses access at once, and rejoining starts afresh.
    await conn.execute(
        sa.delete(content_grants).where(
            content_grants.c.organization_id == org_id,
            content_grants.c.principal_type == "user",
            content_grants.c.principal_id == user_id,
        )
    )
    await conn.execute(
        sa.delete(members).where(members.c.organization_id == org_id, members.c.user_id == user_id)
    )


async def count_admins(conn: AsyncConnection, org_id: str) -> int:
    stmt = sa.select(sa.func.count()).where(
        members.c.organization_id == org_id, members.c.role == "admin"
    )
    return int((await conn.execute(stmt)).scalar_one())


async def existing_user_ids(conn: AsyncConnection, org_id: str, ids: set[str]) -> set[str]:
    stmt = sa.select(members.c.user_id).where(
        members.c.organization_id == org_id, members.c.user_id.in_(ids)
    )
    return set((await conn.execute(stmt)).scalars())


async def user_ids_by_email(conn: AsyncConnection, org_id: str, emails: set[str]) -> dict[str, str]:
    stmt = (
        sa.select(users.c.email, users.c.id)
        .join(members, members.c.user_id == users.c.id)
        .where(members.c.organization_id == org_id, users.c.email.in_(emails))
    )
    return {row.email: row.id for row in await conn.execute(stmt)}


async def belongs_elsewhere(conn: AsyncConnection, user_id: str, org_id: str) -> bool:
    """Whether the user is a member of any organization but `org_id`."""
    stmt = sa.select(
        sa.exists().where(members.c.user_id == user_id, members.c.organization_id != org_id)
    )
    return bool((await conn.execute(stmt)).scalar())
