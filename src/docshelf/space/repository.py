from __future__ import annotations

import functools
from collections.abc import Collection
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from docshelf.authz.content import caller_grants
from docshelf.kit.db import is_postgres
from docshelf.kit.errors import SpaceLocked
from docshelf.kit.sql import Row
from docshelf.models import content_grants, custom_field_values, members, spaces
from docshelf.space import signals

SPACE_COLUMNS = (
    *spaces.c,
    sa.func.coalesce(spaces.c.parent_id, "").label("parent_key"),
)


def in_organization(org_id: str | sa.BindParameter[str]) -> sa.Select[Any]:
    return sa.select(*SPACE_COLUMNS).where(
        spaces.c.organization_id == org_id, spaces.c.deleted_at.is_(None)
    )


@functools.lru_cache(maxsize=128)
def visible_in(visible: sa.ColumnElement[bool], *, in_collection: bool) -> sa.Select[Any]:
    """An organization's live spaces (`org_id`), or a collection's (`collection_id`), that
    `visible` lets through: built once per visibility clause (each built once per shape)."""
    stmt = in_organization(sa.bindparam("org_id")).where(visible)
    if in_collection:
        stmt = stmt.where(spaces.c.parent_id == sa.bindparam("collection_id"))
    return stmt


async def get(conn: AsyncConnection, space_id: str) -> sa.RowMapping | None:
    stmt = sa.select(*SPACE_COLUMNS).where(spaces.c.id == space_id)
    return (await conn.execute(stmt)).mappings().first()


# The space with the caller's membership of its organization and their grants in it, in one
# indexed statement: a `caller_member` of NULL means not a member; `caller_role` NULL then, or
# a guest.
WITH_MEMBERSHIP = (
    sa.select(
        *SPACE_COLUMNS,
        members.c.user_id.label("caller_member"),
        members.c.role.label("caller_role"),
        caller_grants(spaces.c.organization_id, members.c.user_id, members.c.role).label(
            "caller_grants"
        ),
    )
    .select_from(spaces)
    .outerjoin(
        members,
        sa.and_(
            members.c.organization_id == spaces.c.organization_id,
            members.c.user_id == sa.bindparam("uid"),
        ),
    )
    .where(spaces.c.id == sa.bindparam("sid"))
)


async def get_with_membership(conn: AsyncConnection, space_id: str, user_id: str) -> Row | None:
    params = {"sid": space_id, "uid": user_id}
    return (await conn.execute(WITH_MEMBERSHIP, params)).mappings().first()


async def insert(conn: AsyncConnection, values: dict[str, Any]) -> None:
    await conn.execute(sa.insert(spaces).values(**values))


async def update(conn: AsyncConnection, space_id: str, values: dict[str, Any]) -> None:
    await conn.execute(sa.update(spaces).where(spaces.c.id == space_id).values(**values))


async def purge(conn: AsyncConnection, space_id: str) -> None:
    """Removes the space and, through foreign keys and explicit deletes, all it owns."""
    await signals.purging.send(conn, space_id)
    await conn.execute(
        sa.delete(content_grants).where(
            content_grants.c.target_type == "space", content_grants.c.target_id == space_id
        )
    )
    await conn.execute(sa.delete(spaces).where(spaces.c.id == space_id))


async def edit_mode(conn: AsyncConnection, space_id: str) -> str | None:
    stmt = sa.select(spaces.c.edit_mode).where(spaces.c.id == space_id)
    value = (await conn.execute(stmt)).scalar_one_or_none()
    return None if value is None else str(value)


async def by_ids(conn: AsyncConnection, space_ids: Collection[str]) -> dict[str, sa.RowMapping]:
    if not space_ids:
        return {}
    stmt = sa.select(*SPACE_COLUMNS).where(spaces.c.id.in_(list(space_ids)))
    return {r["id"]: r for r in (await conn.execute(stmt)).mappings()}


async def copy_ties(conn: AsyncConnection, source: str, copy: str, now: Any) -> None:
    """The copy gets the source's grants and custom field values, one statement each."""
    for table, key, stamp in (
        (content_grants, "target_id", "created_at"),
        (custom_field_values, "space_id", "updated_at"),
    ):
        replaced = {
            key: sa.literal(copy, type_=table.c[key].type),
            stamp: sa.literal(now, type_=table.c[stamp].type),
        }
        rows = sa.select(*(replaced.get(c.name, c).label(c.name) for c in table.c)).where(
            table.c[key] == source
        )
        if table is content_grants:
            rows = rows.where(content_grants.c.target_type == "space")
        await conn.execute(sa.insert(table).from_select([c.name for c in table.c], rows))


async def lock_head(conn: AsyncConnection, space_id: str, *, share: bool = False) -> str:
    """The head of main, with the space row locked until commit (PostgreSQL; SQLite writers
    hold the database lock already), so two writes to main queue instead of losing one, and a
    space locked meanwhile refuses the write (LockedSpace). `share` is for writes that do not
    move main (change request content): they only need editMode to hold still."""
    stmt = sa.select(spaces.c.revision_id, spaces.c.edit_mode).where(spaces.c.id == space_id)
    if is_postgres(conn):
        stmt = stmt.with_for_update(read=share)
    row = (await conn.execute(stmt)).one()
    if row.edit_mode == "locked":
        raise SpaceLocked()
    return str(row.revision_id)
