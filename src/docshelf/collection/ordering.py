"""Order among siblings: the collections and spaces sharing one parent (or the organization root)
form one ordered list, by (position, kind, id). Positions are gapped (new items go _GAP past the
last), so a move writes one row: the moved item takes a position between its new neighbours.
Only when no integer is left between them are the siblings renumbered, in a few set-based
statements (one per table and 500 siblings), never one per sibling."""

from __future__ import annotations

from typing import Any, Literal

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from docshelf.kit.errors import BadRequest
from docshelf.models import collections, organizations, spaces

Kind = Literal["space", "collection"]
Item = tuple[Kind, str]
_GAP = 1024
_BATCH = 500


def _parent_is(
    column: sa.ColumnElement[str | None], parent_id: str | None
) -> sa.ColumnElement[bool]:
    return column.is_(None) if parent_id is None else column == parent_id


async def siblings(conn: AsyncConnection, org_id: str, parent_id: str | None) -> list[Item]:
    return list(await positions(conn, org_id, parent_id))


async def positions(conn: AsyncConnection, org_id: str, parent_id: str | None) -> dict[Item, int]:
    """The siblings in order, with their stored positions."""
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
    return {(r.kind, r.id): int(r.position) for r in rows}


async def lock_parent(conn: AsyncConnection, org_id: str, parent_id: str | None) -> None:
    """Serialises writers of one parent's order on PostgreSQL (the collection row, or the
    organization row for the root); SQLite writers are serialised already."""
    if parent_id is None:
        stmt = sa.select(organizations.c.id).where(organizations.c.id == org_id)
    else:
        stmt = sa.select(collections.c.id).where(collections.c.id == parent_id)
    await conn.execute(stmt.with_for_update())


async def next_position(conn: AsyncConnection, org_id: str, parent_id: str | None) -> int:
    """A gap past the last sibling. Not the sibling count: items that left (moved, deleted)
    leave gaps, and a count could then equal a sibling's position and tie with it."""
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
    return 0 if last is None else int(last) + _GAP


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


async def write_order(
    conn: AsyncConnection, order: list[Item], moved: Item, current: dict[Item, int]
) -> None:
    """Stores `order`, in which only `moved` changed place; `current` holds the others'
    positions (as `positions` read them)."""
    index = order.index(moved)
    before = current[order[index - 1]] if index > 0 else None
    after = current[order[index + 1]] if index + 1 < len(order) else None
    if before is None and after is None:
        position: int | None = 0
    elif after is None:
        assert before is not None
        position = before + _GAP
    elif before is None:
        position = after - _GAP
    else:
        position = (before + after) // 2 if after - before >= 2 else None
    if position is not None:
        await _set(conn, {moved: position})
        return
    await _set(conn, {item: i * _GAP for i, item in enumerate(order)})


async def _set(conn: AsyncConnection, new: dict[Item, int]) -> None:
    for kind, table in (("space", spaces), ("collection", collections)):
        rows = [(item_id, pos) for (k, item_id), pos in new.items() if k == kind]
        for start in range(0, len(rows), _BATCH):
            chunk = dict(rows[start : start + _BATCH])
            value: sa.ColumnElement[int] | int = (
                next(iter(chunk.values())) if len(chunk) == 1 else sa.case(chunk, value=table.c.id)
            )
            await conn.execute(
                sa.update(table).where(table.c.id.in_(list(chunk))).values(position=value)
            )


async def set_parent(conn: AsyncConnection, item: Item, parent: str | None, now: Any) -> None:
    table = collections if item[0] == "collection" else spaces
    await conn.execute(
        sa.update(table).where(table.c.id == item[1]).values(parent_id=parent, updated_at=now)
    )
