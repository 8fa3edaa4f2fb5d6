"""Order among siblings: the collections and spaces sharing one parent (or the organization root)
form one ordered list. Positions are renumbered 0..n-1 on every move, so they stay small and
dense; a parent holds few enough children that this is cheap."""

from __future__ import annotations

from typing import Literal

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from docshelf.kit.errors import BadRequest
from docshelf.models import collections, organizations, spaces

Kind = Literal["space", "collection"]
Item = tuple[Kind, str]


def _parent_is(
    column: sa.ColumnElement[str | None], parent_id: str | None
) -> sa.ColumnElement[bool]:
    return column.is_(None) if parent_id is None else column == parent_id


async def siblings(conn: AsyncConnection, org_id: str, parent_id: str | None) -> list[Item]:
    cols = sa.select(
        sa.literal("collection").label("kind"), collections.c.id, collections.c.position
    ).where(collections.c.organization_id == org_id, _parent_is(collections.c.parent_id, parent_id))
    sps = sa.select(sa.literal("space").label("kind"), spaces.c.id, spaces.c.position).where(
        spaces.c.organization_id == org_id,
        _parent_is(spaces.c.parent_id, parent_id),
        spaces.c.deleted_at.is_(None),
    )
    union = sa.union_all(cols, sps).subquery()
    rows = await conn.execute(sa.select(union).order_by(union.c.position, union.c.kind, union.c.id))
    return [(r.kind, r.id) for r in rows]


async def lock_parent(conn: AsyncConnection, org_id: str, parent_id: str | None) -> None:
    """Serialises writers of one parent's order on PostgreSQL (the collection row, or the
    organization row for the root); SQLite writers are serialised already."""
    if parent_id is None:
        stmt = sa.select(organizations.c.id).where(organizations.c.id == org_id)
    else:
        stmt = sa.select(collections.c.id).where(collections.c.id == parent_id)
    await conn.execute(stmt.with_for_update())


async def next_position(conn: AsyncConnection, org_id: str, parent_id: str | None) -> int:
    """One past the last sibling. Not the sibling count: items that left (moved, deleted) leave
    gaps, and a count could then equal a sibling's position and tie with it."""
    await lock_parent(conn, org_id, parent_id)
    cols = sa.select(collections.c.position).where(
        collections.c.organization_id == org_id, _parent_is(collections.c.parent_id, parent_id)
    )
    sps = sa.select(spaces.c.position).where(
        spaces.c.organization_id == org_id,
        _parent_is(spaces.c.parent_id, parent_id),
        spaces.c.deleted_at.is_(None),
    )
    union = sa.union_all(cols, sps).subquery()
    last = (await conn.execute(sa.select(sa.func.max(union.c.position)))).scalar()
    return 0 if last is None else int(last) + 1


def place(order: list[Item], item: Item, *, before: Item | None, after: Item | None) -> list[Item]:
    """Pure: `order` with `item` moved (or inserted) before/after a sibling, else at the end."""
    rest = [i for i in order if i != item]
    anchor = before or after
    if anchor is None:
        return [*rest, item]
    if anchor == item:
        raise BadRequest(
            "Invalid body field 'position': an item cannot be placed relative to itself"
        )
    if anchor not in rest:
        kind, anchor_id = anchor
        raise BadRequest(
            f"Invalid body field 'position': {kind} '{anchor_id}' is not in the target parent"
        )
    index = rest.index(anchor) + (0 if before is not None else 1)
    return [*rest[:index], item, *rest[index:]]


async def write_order(conn: AsyncConnection, order: list[Item]) -> None:
    for position, (kind, item_id) in enumerate(order):
        table = spaces if kind == "space" else collections
        await conn.execute(sa.update(table).where(table.c.id == item_id).values(position=position))
