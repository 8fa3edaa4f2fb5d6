from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from docshelf.models import site_share_links


def of_site(site_id: str) -> sa.Select[Any]:
    return sa.select(site_share_links).where(site_share_links.c.site_id == site_id)


async def get(conn: AsyncConnection, site_id: str, link_id: str) -> sa.RowMapping | None:
    stmt = of_site(site_id).where(site_share_links.c.id == link_id)
    return (await conn.execute(stmt)).mappings().first()


async def insert(conn: AsyncConnection, values: dict[str, Any]) -> None:
    await conn.execute(sa.insert(site_share_links).values(**values))


async def update(conn: AsyncConnection, link_id: str, values: dict[str, Any]) -> None:
    await conn.execute(
        sa.update(site_share_links).where(site_share_links.c.id == link_id).values(**values)
    )


async def delete(conn: AsyncConnection, link_id: str) -> None:
    await conn.execute(sa.delete(site_share_links).where(site_share_links.c.id == link_id))
