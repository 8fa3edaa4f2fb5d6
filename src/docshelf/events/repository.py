from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from docshelf.models import events, spaces


async def insert(
    conn: AsyncConnection,
    *,
    id: str,
    type: str,
    organization: str | None,
    space: str | None,
    actor_id: str | None,
    actor_label: str | None,
    data: dict[str, Any],
    now: datetime,
) -> None:
    org: Any = organization
    if org is None:
        # The space's organization, read in the same statement.
        org = sa.select(spaces.c.organization_id).where(spaces.c.id == space).scalar_subquery()
    await conn.execute(
        sa.insert(events).values(
            id=id,
            type=type,
            organization_id=org,
            space_id=space,
            actor_id=actor_id,
            actor_label=actor_label,
            data=data,
            created_at=now,
            dispatched=False,
        )
    )


async def undispatched(conn: AsyncConnection, limit: int) -> Sequence[sa.RowMapping]:
    stmt = (
        sa.select(events)
        .where(events.c.dispatched == sa.false())
        .order_by(events.c.created_at, events.c.id)
        .limit(limit)
        # Two workers on PostgreSQL hand out different events; SQLite serialises writers.
        .with_for_update(skip_locked=True)
    )
    return (await conn.execute(stmt)).mappings().all()


async def mark_dispatched(conn: AsyncConnection, ids: Sequence[str]) -> None:
    if ids:
        await conn.execute(
            sa.update(events).where(events.c.id.in_(ids)).values(dispatched=sa.true())
        )


async def get(conn: AsyncConnection, event_id: str) -> sa.RowMapping | None:
    stmt = sa.select(events).where(events.c.id == event_id)
    return (await conn.execute(stmt)).mappings().first()


async def prune(conn: AsyncConnection, before: datetime) -> int:
    result = await conn.execute(sa.delete(events).where(events.c.created_at < before))
    return int(result.rowcount or 0)
