from __future__ import annotations

import functools
from collections.abc import Collection
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from docshelf.models import collections, content_grants, custom_field_values, invites, spaces

COLLECTION_COLUMNS = (
    *collections.c,
    sa.func.coalesce(collections.c.parent_id, "").label("parent_key"),
)


@functools.lru_cache(maxsize=8)
def visible_in(visible: sa.ColumnElement[bool], *, nested: bool) -> sa.Select[Any]:
    """An organization's collections (`org_id`), only its top-level ones unless `nested`, that
    `visible` lets through: built once per visibility clause (each built once per shape)."""
    stmt = sa.select(*COLLECTION_COLUMNS).where(
        collections.c.organization_id == sa.bindparam("org_id"), visible
    )
    return stmt if nested else stmt.where(collections.c.parent_id.is_(None))


_COLLECTION = sa.select(*COLLECTION_COLUMNS).where(collections.c.id == sa.bindparam("id"))


async def get(conn: AsyncConnection, collection_id: str) -> sa.RowMapping | None:
    return (await conn.execute(_COLLECTION, {"id": collection_id})).mappings().first()


async def insert(conn: AsyncConnection, values: dict[str, Any]) -> None:
    await conn.execute(sa.insert(collections).values(**values))


async def update(conn: AsyncConnection, collection_id: str, values: dict[str, Any]) -> None:
    await conn.execute(
        sa.update(collections).where(collections.c.id == collection_id).values(**values)
    )


async def delete_tree(conn: AsyncConnection, ids: list[str], now: Any) -> None:
    """Deletes the collections; their spaces enter the deleted state and, with their collection
    gone, belong to the organization root if restored (the FK sets parent_id to NULL)."""
    await conn.execute(
        sa.update(spaces)
        .where(spaces.c.parent_id.in_(ids), spaces.c.deleted_at.is_(None))
        .values(deleted_at=now, updated_at=now)
    )
    await conn.execute(
        sa.delete(content_grants).where(
            content_grants.c.target_type == "collection", content_grants.c.target_id.in_(ids)
        )
    )
    await conn.execute(sa.delete(invites).where(invites.c.collection_id.in_(ids)))
    await conn.execute(sa.update(spaces).where(spaces.c.parent_id.in_(ids)).values(parent_id=None))
    # One statement: every collection of the subtree goes, whatever its order.
    await conn.execute(sa.delete(collections).where(collections.c.id.in_(ids)))


async def spaces_in(conn: AsyncConnection, collection_ids: list[str], *, live: bool) -> list[str]:
    """The spaces directly in these collections (only those not deleted when `live`)."""
    stmt = sa.select(spaces.c.id).where(spaces.c.parent_id.in_(collection_ids))
    if live:
        stmt = stmt.where(spaces.c.deleted_at.is_(None))
    return list((await conn.execute(stmt)).scalars())


async def drop_organization_ties(
    conn: AsyncConnection, space_ids: list[str], collection_ids: list[str]
) -> None:
    """Grants to the organization's users and teams, invites, and values of its custom fields
    held by these spaces and collections."""
    grants = content_grants
    await conn.execute(
        sa.delete(grants).where(
            sa.or_(
                sa.and_(grants.c.target_type == "space", grants.c.target_id.in_(space_ids)),
                sa.and_(
                    grants.c.target_type == "collection", grants.c.target_id.in_(collection_ids)
                ),
            )
        )
    )
    await conn.execute(
        sa.delete(invites).where(
            sa.or_(invites.c.space_id.in_(space_ids), invites.c.collection_id.in_(collection_ids))
        )
    )
    await conn.execute(
        sa.delete(custom_field_values).where(custom_field_values.c.space_id.in_(space_ids))
    )


async def move_to_organization(
    conn: AsyncConnection, collection_ids: list[str], space_ids: list[str], org_id: str, now: Any
) -> None:
    await conn.execute(
        sa.update(collections)
        .where(collections.c.id.in_(collection_ids))
        .values(organization_id=org_id, updated_at=now)
    )
    await conn.execute(
        sa.update(spaces)
        .where(spaces.c.id.in_(space_ids))
        .values(organization_id=org_id, updated_at=now)
    )


async def by_ids(
    conn: AsyncConnection, collection_ids: Collection[str]
) -> dict[str, sa.RowMapping]:
    if not collection_ids:
        return {}
    stmt = sa.select(*COLLECTION_COLUMNS).where(collections.c.id.in_(list(collection_ids)))
    return {r["id"]: r for r in (await conn.execute(stmt)).mappings()}
