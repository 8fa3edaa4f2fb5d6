from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from docshelf.content.objects import ObjectStore
from docshelf.content.snapshot import Snapshot
from docshelf.kit.db import upsert_insert
from docshelf.kit.errors import Forbidden
from docshelf.kit.ids import new_id
from docshelf.models import change_requests, revisions, space_blobs, spaces


async def get(conn: AsyncConnection, space_id: str, revision_id: str) -> sa.RowMapping | None:
    stmt = sa.select(revisions).where(
        revisions.c.id == revision_id, revisions.c.space_id == space_id
    )
    return (await conn.execute(stmt)).mappings().first()


def snapshot(conn: AsyncConnection, row: sa.RowMapping) -> Snapshot:
    return Snapshot(ObjectStore(conn, row["space_id"]), row["pages_root"], row["files_root"])


async def insert(
    conn: AsyncConnection,
    *,
    space_id: str,
    type: str,
    parents: list[str],
    pages_root: str | None,
    files_root: str | None,
    author_id: str | None,
    created_at: datetime,
    change_request_id: str | None = None,
    revision_id: str | None = None,
) -> str:
    rid = revision_id or new_id()
    await conn.execute(
        sa.insert(revisions).values(
            id=rid,
            space_id=space_id,
            type=type,
            parents=parents,
            pages_root=pages_root,
            files_root=files_root,
            author_id=author_id,
            change_request_id=change_request_id,
            created_at=created_at,
        )
    )
    return rid


async def lock_space(conn: AsyncConnection, space_id: str, *, share: bool = False) -> str:
    """The head of main, with the space row locked until commit (PostgreSQL; SQLite writers
    hold the database lock already), so two writes to main queue instead of losing one, and a
    space locked meanwhile refuses the write (LockedSpace). `share` is for writes that do not
    move main (change request content): they only need editMode to hold still."""
    stmt = sa.select(spaces.c.revision_id, spaces.c.edit_mode).where(spaces.c.id == space_id)
    if conn.dialect.name == "postgresql":
        stmt = stmt.with_for_update(read=share)
    row = (await conn.execute(stmt)).one()
    if row.edit_mode == "locked":
        raise Forbidden("The space is locked: its content cannot be changed")
    return str(row.revision_id)


async def lock_change_request(conn: AsyncConnection, cr_id: str) -> sa.RowMapping:
    stmt = sa.select(change_requests).where(change_requests.c.id == cr_id)
    if conn.dialect.name == "postgresql":
        stmt = stmt.with_for_update()
    return (await conn.execute(stmt)).mappings().one()


async def set_head(conn: AsyncConnection, space_id: str, revision_id: str, now: datetime) -> None:
    await conn.execute(
        sa.update(spaces)
        .where(spaces.c.id == space_id)
        .values(revision_id=revision_id, updated_at=now)
    )


async def store_blobs(
    conn: AsyncConnection, store: Any, space_id: str, blobs: Mapping[str, bytes]
) -> None:
    """Stores a successful batch's file bytes and records that the space references them.
    Under the blob lock, so the collector cannot delete a blob between this check-and-put and
    the reference that protects it; put is idempotent, so bytes already there are kept."""
    if not blobs:
        return
    await lock_blobs(conn)
    for key, data in blobs.items():
        if not await store.exists(key):
            await store.put(data)
    stmt = upsert_insert(conn.dialect.name, space_blobs).on_conflict_do_nothing()
    await conn.execute(stmt, [{"space_id": space_id, "blob_key": k} for k in sorted(blobs)])


async def lock_blobs(conn: AsyncConnection) -> None:
    """Serialises blob uploads with blob collection on PostgreSQL (SQLite writers are serial
    already), so a blob is never deleted between an upload finding it and referencing it."""
    if conn.dialect.name == "postgresql":
        await conn.execute(sa.text("SELECT pg_advisory_xact_lock(727001)"))
