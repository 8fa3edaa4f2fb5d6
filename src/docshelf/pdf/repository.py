from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from docshelf.content.repository import lock_blob_keys
from docshelf.kit.db import upsert_insert
from docshelf.models import pdf_exports


async def get(conn: AsyncConnection, space_id: str, source_key: str) -> str | None:
    """The blob of the export rendered from `source_key`, if kept."""
    stmt = sa.select(pdf_exports.c.blob_key).where(
        pdf_exports.c.space_id == space_id, pdf_exports.c.source_key == source_key
    )
    return (await conn.execute(stmt)).scalar_one_or_none()


async def record(
    conn: AsyncConnection,
    store: Any,
    *,
    space_id: str,
    source_key: str,
    data: bytes,
    blob_key: str,
    now: datetime,
) -> str:
    """Keeps an export whose bytes were put before the transaction (the blob protocol's upload
    half, as for files: the key's lock, the row, then the bytes checked again). Returns the
    blob kept for `source_key`: a concurrent request may have recorded it first."""
    await lock_blob_keys(conn, [blob_key])
    row = {
        "space_id": space_id,
        "source_key": source_key,
        "blob_key": blob_key,
        "size": len(data),
        "created_at": now,
    }
    await conn.execute(upsert_insert(conn, pdf_exports).on_conflict_do_nothing(), row)
    kept = await get(conn, space_id, source_key)
    assert kept is not None
    if kept == blob_key and not await store.exists(blob_key):
        await store.put(data)  # collected between our put and our lock: put it back
    return kept


async def prune(conn: AsyncConnection, space_id: str, keep_key: str, keep: int) -> list[str]:
    """Drops the space's exports beyond the newest `keep` (the one just kept always stays);
    returns their blob keys for the collector."""
    newest = (
        sa.select(pdf_exports.c.source_key)
        .where(pdf_exports.c.space_id == space_id, pdf_exports.c.source_key != keep_key)
        .order_by(pdf_exports.c.created_at.desc(), pdf_exports.c.source_key.desc())
        .limit(keep - 1)
    )
    stmt = (
        sa.delete(pdf_exports)
        .where(
            pdf_exports.c.space_id == space_id,
            pdf_exports.c.source_key != keep_key,
            pdf_exports.c.source_key.not_in(newest.scalar_subquery()),
        )
        .returning(pdf_exports.c.blob_key)
    )
    return sorted(set((await conn.execute(stmt)).scalars()))
