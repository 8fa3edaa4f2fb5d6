from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from docshelf.authz.content import in_ids
from docshelf.models import invites, spaces


def in_organization(org_id: str) -> sa.Select[Any]:
    prior = invites.alias("prior")
    # An invite is redundant when an older link to the same target already grants the same
    # role: following it changes nothing that the older link would not.
    redundant = (
        sa.exists()
        .where(
            prior.c.organization_id == invites.c.organization_id,
            sa.or_(
                prior.c.space_id == invites.c.space_id,
                sa.and_(prior.c.space_id.is_(None), invites.c.space_id.is_(None)),
            ),
            sa.or_(
                prior.c.collection_id == invites.c.collection_id,
                sa.and_(prior.c.collection_id.is_(None), invites.c.collection_id.is_(None)),
            ),
            sa.or_(
                prior.c.role == invites.c.role,
                sa.and_(prior.c.role.is_(None), invites.c.role.is_(None)),
            ),
            sa.tuple_(prior.c.created_at, prior.c.id)
            < sa.tuple_(invites.c.created_at, invites.c.id),
        )
        .correlate(invites)
    )
    # Invites to a deleted space lead nowhere until it is restored.
    live = sa.or_(
        invites.c.space_id.is_(None),
        sa.exists().where(spaces.c.id == invites.c.space_id, spaces.c.deleted_at.is_(None)),
    )
    return sa.select(*invites.c, redundant.label("redundant")).where(
        invites.c.organization_id == org_id, live
    )


def content_links(
    org_id: str,
    *,
    space: str | None,
    collection: str | None,
    administered: tuple[sa.ColumnElement[bool], list[str]] | None,
) -> sa.Select[Any]:
    """The organization's links to its spaces and collections (one of them when `space` or
    `collection` is given); with `administered` (a clause on spaces, collection ids), only
    links to those."""
    stmt = in_organization(org_id).where(
        sa.or_(invites.c.space_id.is_not(None), invites.c.collection_id.is_not(None))
    )
    if space is not None:
        stmt = stmt.where(invites.c.space_id == space)
    if collection is not None:
        stmt = stmt.where(invites.c.collection_id == collection)
    if administered is not None:
        spaces_clause, collection_ids = administered
        administered_spaces = sa.select(spaces.c.id).where(
            spaces.c.organization_id == org_id, spaces_clause
        )
        stmt = stmt.where(
            sa.or_(
                invites.c.space_id.in_(administered_spaces),
                in_ids(invites.c.collection_id, collection_ids),
            )
        )
    return stmt


async def get(conn: AsyncConnection, org_id: str, invite_id: str) -> sa.RowMapping | None:
    stmt = in_organization(org_id).where(invites.c.id == invite_id)
    return (await conn.execute(stmt)).mappings().first()


async def insert(conn: AsyncConnection, values: dict[str, Any]) -> None:
    await conn.execute(sa.insert(invites).values(**values))


async def update_role(conn: AsyncConnection, invite_id: str, role: str | None) -> None:
    await conn.execute(sa.update(invites).where(invites.c.id == invite_id).values(role=role))


async def delete(conn: AsyncConnection, invite_id: str) -> None:
    await conn.execute(sa.delete(invites).where(invites.c.id == invite_id))


async def get_any(conn: AsyncConnection, org_id: str, invite_id: str) -> sa.RowMapping | None:
    """By id alone, whoever asks: holding the invite id is what lets a non-member join."""
    stmt = in_organization(org_id).where(invites.c.id == invite_id)
    return (await conn.execute(stmt)).mappings().first()
