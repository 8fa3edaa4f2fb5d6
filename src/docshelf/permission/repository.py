from __future__ import annotations

import functools
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from docshelf.authz.roles import ROLES, rank
from docshelf.kit.db import is_postgres
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
    if is_postgres(conn):
        stmt = stmt.order_by(members.c.user_id).with_for_update()
    return set((await conn.execute(stmt)).scalars())


async def org_team_ids(conn: AsyncConnection, org_id: str, ids: list[str]) -> set[str]:
    stmt = sa.select(teams.c.id).where(teams.c.organization_id == org_id, teams.c.id.in_(ids))
    return set((await conn.execute(stmt)).scalars())


def _rank(column: sa.ColumnElement[Any]) -> sa.ColumnElement[int]:
    return sa.case({r: rank(r) for r in ROLES}, value=column, else_=0)


def _larger(a: sa.ColumnElement[int], b: sa.ColumnElement[int]) -> sa.ColumnElement[int]:
    return sa.case((a >= b, a), else_=b)


def aggregate(
    org_id: str,
    targets: list[tuple[str, str]],
    inherited: dict[str | None, int],
    only_rank: int | None,
) -> tuple[sa.Select[Any], dict[str, Any]]:
    """Members with the rank of their effective role on content whose grant chain is
    `targets` (the content and the collections above it): the higher of what their organization
    role gives there (`inherited`, resolved in Python by the same rules as every check) and the
    best grant they or their teams hold on the chain. One statement, paged like any list, and
    its parameters."""
    values: dict[str, Any] = {"org_id": org_id, "from_none": inherited.get(None, 0)}
    for i, (kind, target_id) in enumerate(targets):
        values[f"kind_{i}"], values[f"target_{i}"] = kind, target_id
    values.update({f"from_{r}": inherited.get(r, 0) for r in ROLES})
    if only_rank is not None:
        values["only_rank"] = only_rank
    return _aggregate(len(targets), only_rank is not None), values


@functools.lru_cache(maxsize=64)
def _aggregate(links: int, filtered: bool) -> sa.Select[Any]:
    """aggregate's statement for a chain of `links`, built once (the chain is as deep as the
    collections above the content)."""
    on_chain = sa.or_(
        *[
            sa.and_(
                content_grants.c.target_type == sa.bindparam(f"kind_{i}"),
                content_grants.c.target_id == sa.bindparam(f"target_{i}"),
            )
            for i in range(links)
        ]
    )
    org_id: sa.BindParameter[str] = sa.bindparam("org_id")
    direct = sa.select(
        content_grants.c.principal_id.label("user_id"), _rank(content_grants.c.role).label("r")
    ).where(on_chain, content_grants.c.principal_type == "user")
    via_team = (
        sa.select(team_members.c.user_id, _rank(content_grants.c.role).label("r"))
        .join(
            content_grants,
            sa.and_(
                content_grants.c.principal_type == "team",
                content_grants.c.principal_id == team_members.c.team_id,
            ),
        )
        .where(on_chain, team_members.c.organization_id == org_id)
    )
    granted = sa.union_all(direct, via_team).subquery()
    best = (
        sa.select(granted.c.user_id, sa.func.max(granted.c.r).label("r"))
        .group_by(granted.c.user_id)
        .subquery()
    )
    from_org = sa.case(
        *[(members.c.role == r, sa.bindparam(f"from_{r}", type_=sa.Integer)) for r in ROLES],
        else_=sa.bindparam("from_none", type_=sa.Integer),
    )
    effective = _larger(from_org, sa.func.coalesce(best.c.r, 0))
    stmt = (
        sa.select(
            members.c.user_id,
            effective.label("rank"),
            users.c.id,
            users.c.email,
            users.c.display_name,
            users.c.photo_url,
        )
        .join(users, users.c.id == members.c.user_id)
        .outerjoin(best, best.c.user_id == members.c.user_id)
        .where(members.c.organization_id == org_id)
    )
    if filtered:
        return stmt.where(effective == sa.bindparam("only_rank", type_=sa.Integer))
    return stmt.where(effective > 0)


async def user_grant(conn: AsyncConnection, kind: str, target_id: str, user_id: str) -> str | None:
    stmt = sa.select(content_grants.c.role).where(
        _target(kind, target_id),
        content_grants.c.principal_type == "user",
        content_grants.c.principal_id == user_id,
    )
    return (await conn.execute(stmt)).scalar_one_or_none()
