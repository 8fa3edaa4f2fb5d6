from __future__ import annotations

import functools
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from docshelf.kit.sql import contains_pattern, like_ci
from docshelf.member.repository import MEMBER_COLUMNS
from docshelf.models import (
    collections,
    content_grants,
    members,
    spaces,
    team_members,
    teams,
    users,
)

_members_count = (
    sa.select(sa.func.count())
    .where(team_members.c.team_id == teams.c.id)
    .correlate(teams)
    .scalar_subquery()
)


def _team_grants(target_type: str) -> sa.Select[Any]:
    return sa.select(content_grants.c.target_id).where(
        content_grants.c.principal_type == "team",
        content_grants.c.principal_id == teams.c.id,
        content_grants.c.target_type == target_type,
    )


def _spaces_count() -> sa.ScalarSelect[Any]:
    """GitBook's "count of spaces this team has access to": the organization's live spaces
    granted to it, and those in a collection granted to it, however deep. Found from its
    grants (indexed look-ups), so the count costs what the team holds, not the organization's
    size."""
    anchor = _team_grants("collection").correlate(teams)
    reach = anchor.cte("reach", recursive=True, nesting=True)
    below = collections.alias("below")
    reach = reach.union(sa.select(below.c.id).join(reach, below.c.parent_id == reach.c.target_id))
    inside = spaces.alias("inside")
    granted = sa.union(
        _team_grants("space").correlate(teams),
        sa.select(inside.c.id).join(reach, inside.c.parent_id == reach.c.target_id),
    )
    return (
        sa.select(sa.func.count())
        .select_from(spaces)
        .where(
            spaces.c.id.in_(granted),
            spaces.c.organization_id == teams.c.organization_id,
            spaces.c.deleted_at.is_(None),
        )
        .correlate(teams)
        .scalar_subquery()
    )


# Built once: its cache key is walked for every statement that presents teams.
_SPACES_COUNT = _spaces_count()


def team_columns(caller_id: str | sa.BindParameter[str]) -> tuple[Any, ...]:
    caller_role = (
        sa.select(team_members.c.role)
        .where(team_members.c.team_id == teams.c.id, team_members.c.user_id == caller_id)
        .correlate(teams)
        .scalar_subquery()
    )
    return (
        teams.c.id,
        teams.c.organization_id,
        teams.c.title,
        teams.c.created_at,
        _members_count.label("members_count"),
        _SPACES_COUNT.label("spaces_count"),
        caller_role.label("caller_team_role"),
    )


def in_organization(
    org_id: str | sa.BindParameter[str], caller_id: str | sa.BindParameter[str]
) -> sa.Select[Any]:
    return sa.select(*team_columns(caller_id)).where(teams.c.organization_id == org_id)


def listing(
    org_id: str, caller_id: str, *, title: str | None, owned_by: str | None, none: bool
) -> tuple[sa.Select[Any], dict[str, Any]]:
    """An organization's teams, filtered by a substring of their title, to those `owned_by` a
    member, or to `none`, with the statement's parameters: built once per kind of filter."""
    values = {
        "org_id": org_id,
        "caller_id": caller_id,
        "needle": contains_pattern(title or ""),
        "owner": owned_by,
        # No parameter of the statement, but part of what a cursor continues.
        "none": none,
    }
    return _listing(bool(title), owned_by is not None, none), values


@functools.lru_cache(maxsize=16)
def _listing(titled: bool, owned: bool, none: bool) -> sa.Select[Any]:
    stmt = in_organization(sa.bindparam("org_id"), sa.bindparam("caller_id"))
    if titled:
        stmt = stmt.where(like_ci(teams.c.title, "needle"))
    if none:
        stmt = stmt.where(sa.false())
    elif owned:
        stmt = stmt.where(
            teams.c.id.in_(owned_team_ids(sa.bindparam("org_id"), sa.bindparam("owner")))
        )
    return stmt


async def get(
    conn: AsyncConnection, org_id: str, team_id: str, caller_id: str
) -> sa.RowMapping | None:
    stmt = in_organization(org_id, caller_id).where(teams.c.id == team_id)
    return (await conn.execute(stmt)).mappings().first()


async def insert(
    conn: AsyncConnection, *, team_id: str, org_id: str, title: str, now: datetime
) -> None:
    await conn.execute(
        sa.insert(teams).values(id=team_id, organization_id=org_id, title=title, created_at=now)
    )


async def update(conn: AsyncConnection, team_id: str, values: dict[str, Any]) -> None:
    await conn.execute(sa.update(teams).where(teams.c.id == team_id).values(**values))


async def delete(conn: AsyncConnection, team_id: str) -> None:
    await conn.execute(
        sa.delete(content_grants).where(
            content_grants.c.principal_type == "team", content_grants.c.principal_id == team_id
        )
    )
    await conn.execute(sa.delete(team_members).where(team_members.c.team_id == team_id))
    await conn.execute(sa.delete(teams).where(teams.c.id == team_id))


def members_of(team_id: str) -> sa.Select[Any]:
    return (
        sa.select(*MEMBER_COLUMNS, team_members.c.role.label("team_role"), team_members.c.added_at)
        .select_from(team_members)
        .join(
            members,
            sa.and_(
                members.c.organization_id == team_members.c.organization_id,
                members.c.user_id == team_members.c.user_id,
            ),
        )
        .join(users, users.c.id == members.c.user_id)
        .where(team_members.c.team_id == team_id)
    )


def teams_of_member(
    org_id: str, user_id: str, caller_id: str, *, title: str | None
) -> tuple[sa.Select[Any], dict[str, Any]]:
    """The teams a member belongs to, with their role in each, filtered by a substring of the
    title, and the statement's parameters."""
    values = {
        "org_id": org_id,
        "user_id": user_id,
        "caller_id": caller_id,
        "needle": contains_pattern(title or ""),
    }
    return _of_member(bool(title)), values


@functools.lru_cache(maxsize=2)
def _of_member(titled: bool) -> sa.Select[Any]:
    stmt = (
        sa.select(
            *team_columns(sa.bindparam("caller_id")),
            team_members.c.role.label("member_team_role"),
        )
        .join(team_members, team_members.c.team_id == teams.c.id)
        .where(
            teams.c.organization_id == sa.bindparam("org_id"),
            team_members.c.user_id == sa.bindparam("user_id"),
        )
    )
    return stmt.where(like_ci(teams.c.title, "needle")) if titled else stmt


async def team_roles(conn: AsyncConnection, team_id: str) -> dict[str, str]:
    stmt = sa.select(team_members.c.user_id, team_members.c.role).where(
        team_members.c.team_id == team_id
    )
    return {row.user_id: row.role for row in await conn.execute(stmt)}


async def add_member(
    conn: AsyncConnection, *, team_id: str, org_id: str, user_id: str, role: str, now: datetime
) -> None:
    await conn.execute(
        sa.insert(team_members).values(
            team_id=team_id, organization_id=org_id, user_id=user_id, role=role, added_at=now
        )
    )


async def set_member_role(conn: AsyncConnection, team_id: str, user_id: str, role: str) -> None:
    await conn.execute(
        sa.update(team_members)
        .where(team_members.c.team_id == team_id, team_members.c.user_id == user_id)
        .values(role=role)
    )


async def remove_members(conn: AsyncConnection, team_id: str, user_ids: set[str]) -> None:
    if user_ids:
        await conn.execute(
            sa.delete(team_members).where(
                team_members.c.team_id == team_id, team_members.c.user_id.in_(user_ids)
            )
        )


def owned_team_ids(
    org_id: str | sa.BindParameter[str], user_id: str | sa.BindParameter[str]
) -> sa.Select[Any]:
    return sa.select(team_members.c.team_id).where(
        team_members.c.organization_id == org_id,
        team_members.c.user_id == user_id,
        team_members.c.role == "owner",
    )
