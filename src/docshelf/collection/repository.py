from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from docshelf.models import collections, content_grants, invites, spaces

COLLECTION_COLUMNS = (
    *collections.c,
    sa.func.coalesce(collections.c.parent_id, "").label("parent_key"),
)


def in_organization(org_id: str) -> sa.Select[Any]:
    return sa.select(*COLLECTION_COLUMNS).where(collections.c.organization_id == org_id)


async def get(conn: AsyncConnection, collection_id: str) -> sa.RowMapping | None:
    stmt = sa.select(*COLLECTION_COLUMNS).where(collections.c.id == collection_id)
    return (await conn.execute(stmt)).mappings().first()


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
