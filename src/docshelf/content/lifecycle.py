"""What the content engine does when a space is created, duplicated or purged."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from docshelf.content import repository, signals
from docshelf.content.tree import hamt, objects
from docshelf.kit.db import unit_of_work
from docshelf.models import import_stages, pdf_exports, space_blobs, spaces
from docshelf.space.signals import SpaceCreated, SpaceDuplicated
from docshelf.worker.queue import enqueue
from docshelf.worker.registry import JobEnv, task

COLLECT_BLOBS = "content.collect_blobs"

log = logging.getLogger("docshelf.content")


async def start_space(conn: AsyncConnection, event: SpaceCreated) -> None:
    """A new space starts with an empty revision."""
    await repository.insert(
        conn,
        space_id=event.space_id,
        revision_id=event.revision_id,
        type="edits",
        parents=[],
        pages_root=None,
        files_root=None,
        author_id=event.author_id,
        created_at=event.at,
    )


async def copy_content(conn: AsyncConnection, event: SpaceDuplicated) -> None:
    """The source's main content as the first revision of the copy.

    Only what the head reaches is copied (its map nodes, page and file records, markdown texts
    and the blobs its files name), never the source's history, with INSERT … SELECT so the bytes
    stay in the database; what is derived from main (links, search) hears `signals.copied` and
    copies its rows the same way instead of extracting them again."""
    source, target = event.source, event.copy
    head_id = (
        await conn.execute(sa.select(spaces.c.revision_id).where(spaces.c.id == source))
    ).scalar_one()
    head = await repository.get(conn, source, head_id)
    assert head is not None
    store = objects.ObjectStore(conn, source)
    page_nodes, pages = await hamt.walk(store, head["pages_root"])
    file_nodes, files = await hamt.walk(store, head["files_root"])
    reusable_nodes, reusables = await hamt.walk(store, head["reusable_root"])
    records = set(pages.values()) | set(files.values()) | set(reusables.values())
    texts: set[str] = set()
    blobs: set[str] = set()
    loaded = await store.get_json(records)
    for page_hash in set(pages.values()) | set(reusables.values()):
        if text := loaded[page_hash].get("markdown"):
            texts.add(text)
    for file_hash in set(files.values()):
        if blob := loaded[file_hash].get("blob"):
            blobs.add(blob)
    await objects.copy_objects(
        conn, source, target, page_nodes | file_nodes | reusable_nodes | records | texts
    )
    if blobs:
        await conn.execute(
            sa.insert(space_blobs), [{"space_id": target, "blob_key": b} for b in sorted(blobs)]
        )
    await repository.insert(
        conn,
        space_id=target,
        revision_id=event.revision_id,
        type="edits",
        parents=[],
        pages_root=head["pages_root"],
        files_root=head["files_root"],
        reusable_root=head["reusable_root"],
        author_id=event.author_id,
        created_at=event.at,
    )
    await signals.copied.send(conn, signals.ContentCopied(source, target))


# A collection job holds the locks of its keys while it deletes their bytes: a bounded batch
# keeps that short and within PostgreSQL's lock table.
COLLECT_BATCH = 100


async def release_space(conn: AsyncConnection, space_id: str) -> None:
    """Before a space's rows go: schedules the collection of the blobs only it referenced.
    Collected after commit, by a job, so a rolled-back purge never loses bytes."""
    keys = sa.union(
        sa.select(space_blobs.c.blob_key).where(space_blobs.c.space_id == space_id),
        sa.select(import_stages.c.blob_key).where(import_stages.c.space_id == space_id),
        sa.select(pdf_exports.c.blob_key).where(pdf_exports.c.space_id == space_id),
    )
    wanted = sorted((await conn.execute(keys)).scalars())
    await signals.released.send(conn, space_id)
    await schedule_collection(conn, wanted)


async def schedule_collection(conn: AsyncConnection, keys: list[str]) -> None:
    """Collects, after commit, whichever of these blobs nothing references by then."""
    for i in range(0, len(keys), COLLECT_BATCH):
        await enqueue(conn, COLLECT_BLOBS, {"keys": keys[i : i + COLLECT_BATCH]})


@asynccontextmanager
async def collect_unless_kept(engine: AsyncEngine, keys: set[str]) -> AsyncIterator[None]:
    """Around a write that references bytes put before it (`repository.put_blobs`): when the
    write fails, the bytes are handed to the collector, which deletes whichever nothing
    references, so a refused batch leaves nothing behind in the blob store."""
    try:
        yield
    except BaseException:
        if keys:
            try:
                async with unit_of_work(engine) as conn:
                    await schedule_collection(conn, sorted(keys))
            except Exception:
                # Most likely the same contention that failed the write; the bytes stay until
                # another write of them is refused or collected.
                log.warning(
                    "could not schedule the collection of %d unreferenced blobs: %s",
                    len(keys),
                    ", ".join(sorted(keys)),
                    exc_info=True,
                )
        raise


@task(COLLECT_BLOBS)
async def collect_blobs(conn: AsyncConnection, payload: dict[str, Any], *, env: JobEnv) -> None:
    """The collecting half of the blob protocol: under each key's lock (an upload referencing it
    meanwhile waits, then finds the bytes gone and puts them back), bytes whose last reference
    is gone are deleted. The references are rows already deleted and committed (purge, end of
    an import); the bytes go last, so a failure here only leaves bytes for a retry."""
    keys = sorted(set(payload["keys"]))
    await repository.lock_blob_keys(conn, keys)
    held = await repository.held_blobs(conn, keys)
    for key in keys:
        if key not in held:
            await env.blobs.delete(key)
