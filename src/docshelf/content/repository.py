from __future__ import annotations

import asyncio
from collections.abc import Collection, Iterable, Mapping
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from docshelf.blobs import blob_key, check_key
from docshelf.content.tree.objects import ObjectStore
from docshelf.content.tree.snapshot import Snapshot
from docshelf.kit.db import is_postgres, reads_committed, upsert_insert
from docshelf.kit.ids import new_id
from docshelf.kit.lru import SizedLRU, counted
from docshelf.kit.sql import Row
from docshelf.models import (
    content_objects,
    import_stages,
    listing_snapshots,
    pdf_exports,
    revisions,
    space_blobs,
    spaces,
)

# Most content reads run it: built once, its cache key with it. Its columns never change once
# the revision is committed (the author, which a user's deletion clears, is left out), and a
# revision goes only with its space, whose row every read loads first: a committed revision
# is kept, per process, by its id.
_REVISION = sa.select(*(c for c in revisions.c if c.name != "author_id")).where(
    revisions.c.id == sa.bindparam("rid"), revisions.c.space_id == sa.bindparam("sid")
)
_KEPT_REVISIONS: SizedLRU[tuple[str, str], Row] = counted(4096)


async def get(conn: AsyncConnection, space_id: str, revision_id: str) -> Row | None:
    key = (space_id, revision_id)
    # Reads only: a write reads what its own snapshot holds.
    reading = reads_committed(conn)
    kept = _KEPT_REVISIONS.get(key) if reading else None
    if kept is not None:
        return kept
    row = (await conn.execute(_REVISION, {"rid": revision_id, "sid": space_id})).mappings().first()
    if row is not None and reading:
        _KEPT_REVISIONS.put(key, dict(row))
    return row


def snapshot(conn: AsyncConnection, row: Row) -> Snapshot:
    return Snapshot(
        ObjectStore(conn, row["space_id"]),
        row["pages_root"],
        row["files_root"],
        row["reusable_root"],
    )


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
    reusable_root: str | None = None,
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
            reusable_root=reusable_root,
            author_id=author_id,
            change_request_id=change_request_id,
            created_at=created_at,
        )
    )
    return rid


async def set_head(conn: AsyncConnection, space_id: str, revision_id: str, now: datetime) -> None:
    await conn.execute(
        sa.update(spaces)
        .where(spaces.c.id == space_id)
        .values(revision_id=revision_id, updated_at=now)
    )


async def put_blobs(store: Any, blobs: Iterable[bytes]) -> set[str]:
    """Puts bytes before any transaction opens (no lock waits on the blob store); the keys go
    to `store_blobs(..., put=...)` in the write that follows. Bytes that nothing comes to
    reference are collected (`content.lifecycle.forget_put`)."""
    return set(await asyncio.gather(*(store.put(data) for data in blobs)))


async def store_blobs(
    conn: AsyncConnection,
    store: Any,
    space_id: str,
    blobs: Mapping[str, bytes],
    *,
    put: Collection[str] = (),
) -> None:
    """Stores a successful batch's file bytes and records that the space references them.
    Keys in `put` were put before the transaction and are not put again."""
    rows = [{"space_id": space_id, "blob_key": k} for k in sorted(blobs)]
    stmt = upsert_insert(conn, space_blobs).on_conflict_do_nothing()
    await _put_and_reference(conn, store, blobs, stmt, rows, put=put)


async def stage_blob(
    conn: AsyncConnection,
    store: Any,
    space_id: str,
    revision_id: str,
    data: bytes,
    *,
    put: Collection[str] = (),
) -> str:
    """Stores a large import's archive until the job creating `revision_id` drops it."""
    key = blob_key(data)
    row = {"revision_id": revision_id, "space_id": space_id, "blob_key": key}
    await _put_and_reference(conn, store, {key: data}, sa.insert(import_stages), [row], put=put)
    return key


async def unstage_blob(conn: AsyncConnection, revision_id: str) -> str | None:
    """Drops a finished import's stage; returns the key it held, for the collector."""
    stmt = (
        sa.delete(import_stages)
        .where(import_stages.c.revision_id == revision_id)
        .returning(import_stages.c.blob_key)
    )
    return (await conn.execute(stmt)).scalar_one_or_none()


async def _put_and_reference(
    conn: AsyncConnection,
    store: Any,
    blobs: Mapping[str, bytes],
    stmt: Any,
    rows: list[dict[str, Any]],
    *,
    put: Collection[str] = (),
) -> None:
    """The upload half of the blob protocol (docs/decisions/0014). Bytes first, under no
    lock: a put is idempotent, its key being the bytes' SHA-256. Then the reference, under the
    blobs' own locks, held until commit, so the collector either runs before (and the bytes are
    checked again below) or after (and sees the reference)."""
    if not blobs:
        return
    for key, data in blobs.items():
        if key not in put:
            await store.put(data)
    await lock_blob_keys(conn, blobs)
    await conn.execute(stmt, rows)
    # A collector that ran between our put and our lock (on PostgreSQL, holding the key's
    # lock; on SQLite, a job process writing before our transaction) may have deleted the
    # bytes; nothing can delete them again before we commit, so putting them back is enough.
    # On SQLite, bytes put in this transaction cannot have been collected yet.
    recheck = blobs if is_postgres(conn) else put
    for key in recheck:
        if key in blobs and not await store.exists(key):
            await store.put(blobs[key])


async def held_blobs(conn: AsyncConnection, keys: list[str]) -> set[str]:
    """The keys still referenced by a space, a pending import or a kept export."""
    referenced = sa.union(
        sa.select(space_blobs.c.blob_key).where(space_blobs.c.blob_key.in_(keys)),
        sa.select(import_stages.c.blob_key).where(import_stages.c.blob_key.in_(keys)),
        sa.select(pdf_exports.c.blob_key).where(pdf_exports.c.blob_key.in_(keys)),
    )
    return set((await conn.execute(referenced)).scalars())


_BLOB_LOCK_SPACE = 727002  # the first key of the two-key advisory locks taken on blobs


def _lock_id(key: str) -> int:
    return int.from_bytes(bytes.fromhex(check_key(key)[:8]), "big", signed=True)


async def lock_blob_keys(conn: AsyncConnection, keys: Iterable[str]) -> None:
    """One transaction-level advisory lock per blob on PostgreSQL (SQLite writers are serial
    already), taken in ascending order so that two holders of several never deadlock. Uploads
    of other blobs never wait for them."""
    if not is_postgres(conn):
        return
    ids = sorted(
        {int.from_bytes(bytes.fromhex(check_key(k)[:8]), "big", signed=True) for k in keys}
    )
    if ids:
        await conn.execute(
            sa.text(
                "SELECT pg_advisory_xact_lock(:space, t.id) "
                "FROM unnest(CAST(:ids AS integer[])) WITH ORDINALITY AS t(id, n) ORDER BY t.n"
            ),
            {"space": _BLOB_LOCK_SPACE, "ids": ids},
        )


async def listing_snapshot(
    conn: AsyncConnection, space_id: str, format: str
) -> sa.RowMapping | None:
    """The space's stored listing pieces (pages_root, data), if stored in this format."""
    stmt = sa.select(listing_snapshots.c.pages_root, listing_snapshots.c.data).where(
        listing_snapshots.c.space_id == space_id, listing_snapshots.c.format == format
    )
    return (await conn.execute(stmt)).mappings().first()


async def listing_snapshot_root(conn: AsyncConnection, space_id: str, format: str) -> str | None:
    """The pages map the space's stored listing pieces are of, if stored in this format."""
    stmt = sa.select(listing_snapshots.c.pages_root).where(
        listing_snapshots.c.space_id == space_id, listing_snapshots.c.format == format
    )
    return (await conn.execute(stmt)).scalar_one_or_none()


async def main_pages_root(conn: AsyncConnection, space_id: str) -> str | None:
    """The pages map of the space's main head, None for a space gone or deleted."""
    stmt = (
        sa.select(revisions.c.pages_root)
        .join(spaces, spaces.c.revision_id == revisions.c.id)
        .where(spaces.c.id == space_id, spaces.c.deleted_at.is_(None))
    )
    return (await conn.execute(stmt)).scalar_one_or_none()


async def put_listing_snapshot(
    conn: AsyncConnection, space_id: str, pages_root: str, format: str, data: bytes, now: datetime
) -> None:
    """Stores the space's listing pieces in place of any earlier ones, unless the space is gone
    (its rows deleted meanwhile: nothing to keep)."""
    exists = sa.select(spaces.c.id).where(spaces.c.id == space_id)
    if (await conn.execute(exists)).first() is None:
        return
    values = {"pages_root": pages_root, "format": format, "data": data, "created_at": now}
    stmt = upsert_insert(conn, listing_snapshots).values(space_id=space_id, **values)
    await conn.execute(
        stmt.on_conflict_do_update(index_elements=[listing_snapshots.c.space_id], set_=values)
    )


async def drop_listing_snapshot(conn: AsyncConnection, space_id: str) -> None:
    await conn.execute(sa.delete(listing_snapshots).where(listing_snapshots.c.space_id == space_id))


async def spaces_without_listing_snapshot(
    conn: AsyncConnection, format: str, after: str, limit: int
) -> list[tuple[str, bytes]]:
    """(space id, the root node of main's pages map) of live spaces with pages whose listing
    pieces are not stored in this format, by id after `after`."""
    stored = sa.and_(
        listing_snapshots.c.space_id == spaces.c.id, listing_snapshots.c.format == format
    )
    root_node = sa.and_(
        content_objects.c.space_id == spaces.c.id,
        content_objects.c.hash == revisions.c.pages_root,
    )
    stmt = (
        sa.select(spaces.c.id, content_objects.c.data)
        .join(revisions, revisions.c.id == spaces.c.revision_id)
        .join(content_objects, root_node)
        .outerjoin(listing_snapshots, stored)
        .where(
            spaces.c.deleted_at.is_(None),
            listing_snapshots.c.space_id.is_(None),
            spaces.c.id > after,
        )
        .order_by(spaces.c.id)
        .limit(limit)
    )
    return [(r.id, bytes(r.data)) for r in await conn.execute(stmt)]
