"""What the content engine does when a space is created, duplicated or purged."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from docshelf.blobs import BlobStore, open_blob_store
from docshelf.config import Settings, get_settings
from docshelf.content import hamt, listing, objects, repository, signals
from docshelf.content.snapshot import Snapshot
from docshelf.kit.clock import utcnow
from docshelf.kit.db import unit_of_work
from docshelf.models import import_stages, pdf_exports, space_blobs, spaces
from docshelf.space.signals import SpaceCreated, SpaceDuplicated
from docshelf.worker.queue import enqueue
from docshelf.worker.registry import task

COLLECT_BLOBS = "content.collect_blobs"
SNAPSHOT_LISTING = "content.snapshot_listing"

log = logging.getLogger("docshelf.content")

_store: BlobStore | None = None


def use_blob_store(store: BlobStore) -> None:
    """The store jobs use: the serving app's, so that a test's data directory is the one the
    collector cleans."""
    global _store
    _store = store


def blob_store() -> BlobStore:
    global _store
    if _store is None:
        _store = open_blob_store(get_settings())
    return _store


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
async def collect_blobs(conn: AsyncConnection, payload: dict[str, Any]) -> None:
    """The collecting half of the blob protocol: under each key's lock (an upload referencing it
    meanwhile waits, then finds the bytes gone and puts them back), bytes whose last reference
    is gone are deleted. The references are rows already deleted and committed (purge, end of
    an import); the bytes go last, so a failure here only leaves bytes for a retry."""
    keys = sorted(set(payload["keys"]))
    await repository.lock_blob_keys(conn, keys)
    held = await repository.held_blobs(conn, keys)
    store = blob_store()
    for key in keys:
        if key not in held:
            await store.delete(key)


# -- stored listing pieces ---------------------------------------------------------------------

_settings: Settings | None = None


def use_settings(settings: Settings) -> None:
    """The settings main's moves read (which spaces keep stored pieces): the serving app's."""
    global _settings
    _settings = settings


# Records a stored snapshot may lag main by before it is rewritten: a process listing from it
# decodes and encodes those few, which costs less than rewriting megabytes on every edit.
_LAG = 64


async def keeps_stored_pieces(snap: Snapshot) -> bool:
    """Whether the space of `snap` is large enough for stored listing pieces (one map node
    read, the root's: cached like every object)."""
    if snap.pages_root is None:
        return False
    return _large(await hamt.count(snap.store, snap.pages_root))


def _large(entries: int) -> bool:
    # The pages map holds the root's record too.
    return entries - 1 >= (_settings or get_settings()).listing_snapshot_pages


async def listing_moved(
    conn: AsyncConnection, space_id: str, before: Snapshot | None, after: Snapshot
) -> None:
    """Main's pages changed: a large space's stored listing pieces are brought up to date by a
    job after commit (one queued per space), and those of a space that shrank are dropped."""
    if await keeps_stored_pieces(after) or (
        before is not None and await keeps_stored_pieces(before)
    ):
        await _queue_snapshot(conn, space_id)


async def _queue_snapshot(conn: AsyncConnection, space_id: str) -> None:
    await enqueue(
        conn,
        SNAPSHOT_LISTING,
        {"space_id": space_id},
        dedupe_key=f"{SNAPSHOT_LISTING}:{space_id}",
        space=space_id,
    )


@dataclass(frozen=True)
class _Snapshot:
    root: str | None  # main's pages map when the job read it
    data: bytes | None = None  # the pieces to store, if any
    drop: bool = False  # the space is no longer large enough: its stored pieces go


async def _prepare_snapshot(engine: AsyncEngine, payload: dict[str, Any]) -> _Snapshot:
    """What to store for main's pages, if anything. Read and built before the job's
    transaction opens (~100-200 ms for 10,000 pages, which no write lock waits on); stored
    pieces a few records behind main are left as they are. A rewrite is built from the pages
    themselves, never from the stored bytes: a damaged value is then replaced, not carried
    on, and it happens once every few dozen changed records, in the worker."""
    space_id = payload["space_id"]
    async with unit_of_work(engine, write=False) as conn:
        root = await repository.main_pages_root(conn, space_id)
        if root is None:
            return _Snapshot(None)  # a space gone or deleted: the purge drops the row
        store = objects.ObjectStore(conn, space_id)
        entries = await hamt.count(store, root)
        if not _large(entries):
            return _Snapshot(root, drop=True)
        stored = await repository.listing_snapshot_root(conn, space_id, listing.FORMAT)
        if stored == root:
            return _Snapshot(root)
        if stored is not None:
            try:
                lag = len(await hamt.diff(store, stored, root))
            except KeyError:
                lag = None  # its objects are gone (a purged history)
            if lag is not None and lag <= max(_LAG, entries // 100):
                return _Snapshot(root)
        pieces = await listing.pieces_of(store, root, None)
    return _Snapshot(root, listing.dumps(pieces))


@task(SNAPSHOT_LISTING, prepare=_prepare_snapshot)
async def snapshot_listing(conn: AsyncConnection, payload: dict[str, Any], plan: _Snapshot) -> None:
    space_id = payload["space_id"]
    if plan.drop:
        await repository.drop_listing_snapshot(conn, space_id)
    elif plan.root is not None and plan.data is not None:
        await repository.put_listing_snapshot(
            conn, space_id, plan.root, listing.FORMAT, plan.data, utcnow()
        )
    if plan.root is not None and await repository.main_pages_root(conn, space_id) != plan.root:
        # Main moved while this job ran: its move found this job's key taken and queued
        # nothing, so another pass looks (no key: this one still holds it).
        await enqueue(conn, SNAPSHOT_LISTING, {"space_id": space_id}, space=space_id)


SWEEP_LISTINGS = "content.sweep_listing_snapshots"
_SWEEP_BATCH = 500


async def _large_spaces_unstored(engine: AsyncEngine, _payload: dict[str, Any]) -> list[str]:
    # Read before the job's transaction opens: each space's pages-map root node, read with the
    # space in one statement a batch (the node holds the map's entry count).
    found: list[str] = []
    after = ""
    async with unit_of_work(engine, write=False) as conn:
        while True:
            batch = await repository.spaces_without_listing_snapshot(
                conn, listing.FORMAT, after, _SWEEP_BATCH
            )
            found += [space_id for space_id, node in batch if _large(hamt.count_of(node))]
            if len(batch) < _SWEEP_BATCH:
                return found
            after = batch[-1][0]


# A minute after a worker starts (when none is pending), so the large spaces an upgrade left
# without stored pieces get them then rather than up to 6 hours later.
@task(
    SWEEP_LISTINGS,
    every=timedelta(hours=6),
    first=timedelta(minutes=1),
    prepare=_large_spaces_unstored,
)
async def sweep_listing_snapshots(
    conn: AsyncConnection, _payload: dict[str, Any], spaces_found: list[str]
) -> None:
    """Queues stored pieces for the large spaces without any in the current format: main's
    moves keep them up to date, but a space not edited since the upgrade that brought them
    (or a new format) would otherwise wait for its next edit."""
    for space_id in spaces_found:
        await _queue_snapshot(conn, space_id)
