from __future__ import annotations

from collections.abc import Mapping

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from docshelf.links.extract import FoundLink, extract
from docshelf.models import page_links

Row = FoundLink


def rows_for(markdown: str) -> list[Row]:
    return extract(markdown)


async def reindex(
    conn: AsyncConnection, space_id: str, pages: Mapping[str, list[Row] | None]
) -> None:
    """Replaces the links of each page (None: the page is gone)."""
    if not pages:
        return
    ids = list(pages)
    for start in range(0, len(ids), 500):
        await conn.execute(
            sa.delete(page_links).where(
                page_links.c.space_id == space_id,
                page_links.c.page_id.in_(ids[start : start + 500]),
            )
        )
    values = [
        {
            "space_id": space_id,
            "page_id": pid,
            "position": i,
            "kind": row.kind,
            "target": row.target,
            "anchor": row.anchor,
        }
        for pid, rows in pages.items()
        for i, row in enumerate(rows or ())
    ]
    for start in range(0, len(values), 500):
        await conn.execute(sa.insert(page_links), values[start : start + 500])


async def of_space(conn: AsyncConnection, space_id: str) -> list[sa.RowMapping]:
    stmt = (
        sa.select(page_links)
        .where(page_links.c.space_id == space_id)
        .order_by(page_links.c.page_id, page_links.c.position)
    )
    return list((await conn.execute(stmt)).mappings())


async def of_page(conn: AsyncConnection, space_id: str, page_id: str) -> list[sa.RowMapping]:
    stmt = (
        sa.select(page_links)
        .where(page_links.c.space_id == space_id, page_links.c.page_id == page_id)
        .order_by(page_links.c.position)
    )
    return list((await conn.execute(stmt)).mappings())


async def pages_linking_to(
    conn: AsyncConnection, space_id: str, kind: str, target: str
) -> list[str]:
    stmt = (
        sa.select(page_links.c.page_id)
        .where(
            page_links.c.space_id == space_id,
            page_links.c.kind == kind,
            page_links.c.target == target,
        )
        .distinct()
        .order_by(page_links.c.page_id)
    )
    return list((await conn.execute(stmt)).scalars())
