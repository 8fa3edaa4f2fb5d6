"""Writes of content grants shared by the permission API (`permission`) and by whoever
creates content (`space`, `collection`): below both, so neither imports the other."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncConnection

from docshelf.kit.db import upsert_insert
from docshelf.models import content_grants


async def upsert(
    conn: AsyncConnection,
    *,
    org_id: str,
    kind: str,
    target_id: str,
    principal: tuple[str, str],
    role: str,
    now: datetime,
) -> None:
    stmt = upsert_insert(conn, content_grants).values(
        organization_id=org_id,
        target_type=kind,
        target_id=target_id,
        principal_type=principal[0],
        principal_id=principal[1],
        role=role,
        created_at=now,
    )
    await conn.execute(
        stmt.on_conflict_do_update(
            index_elements=["target_type", "target_id", "principal_type", "principal_id"],
            set_={"role": role},
        )
    )


async def make_creator_admin(
    conn: AsyncConnection, *, org_id: str, kind: str, target_id: str, user_id: str, now: datetime
) -> None:
    """Whoever creates content (or a copy) administers it, even where the organization gives
    them less. Callers skip organization admins, who already are."""
    await upsert(
        conn,
        org_id=org_id,
        kind=kind,
        target_id=target_id,
        principal=("user", user_id),
        role="admin",
        now=now,
    )
