"""A large space's listing pieces, stored in the database between processes: brought up to
date by a job after main's pages move (one queued per space), dropped when the space shrinks,
and swept for large spaces an upgrade left without them."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from docshelf.config import Settings, get_settings
from docshelf.content import repository
from docshelf.content.listing import pieces
from docshelf.content.tree import hamt, objects
from docshelf.content.tree.snapshot import Snapshot
from docshelf.kit.clock import utcnow
from docshelf.kit.db import unit_of_work
from docshelf.worker.queue import enqueue
from docshelf.worker.registry import JobEnv, task

SNAPSHOT_LISTING = "content.snapshot_listing"

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


async def _prepare_snapshot(
    engine: AsyncEngine, payload: dict[str, Any], *, env: JobEnv
) -> _Snapshot:
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
        stored = await repository.listing_snapshot_root(conn, space_id, pieces.FORMAT)
        if stored == root:
            return _Snapshot(root)
        if stored is not None:
            try:
                lag = len(await hamt.diff(store, stored, root))
            except KeyError:
                lag = None  # its objects are gone (a purged history)
            if lag is not None and lag <= max(_LAG, entries // 100):
                return _Snapshot(root)
        pieces_found = await pieces.pieces_of(store, root, None)
    return _Snapshot(root, pieces.dumps(pieces_found))


@task(SNAPSHOT_LISTING, prepare=_prepare_snapshot)
async def snapshot_listing(
    conn: AsyncConnection, payload: dict[str, Any], plan: _Snapshot, *, env: JobEnv
) -> None:
    space_id = payload["space_id"]
    if plan.drop:
        await repository.drop_listing_snapshot(conn, space_id)
    elif plan.root is not None and plan.data is not None:
        await repository.put_listing_snapshot(
            conn, space_id, plan.root, pieces.FORMAT, plan.data, utcnow()
        )
    if plan.root is not None and await repository.main_pages_root(conn, space_id) != plan.root:
        # Main moved while this job ran: its move found this job's key taken and queued
        # nothing, so another pass looks (no key: this one still holds it).
        await enqueue(conn, SNAPSHOT_LISTING, {"space_id": space_id}, space=space_id)


SWEEP_LISTINGS = "content.sweep_listing_snapshots"
_SWEEP_BATCH = 500


async def _large_spaces_unstored(
    engine: AsyncEngine, _payload: dict[str, Any], *, env: JobEnv
) -> list[str]:
    # Read before the job's transaction opens: each space's pages-map root node, read with the
    # space in one statement a batch (the node holds the map's entry count).
    found: list[str] = []
    after = ""
    async with unit_of_work(engine, write=False) as conn:
        while True:
            batch = await repository.spaces_without_listing_snapshot(
                conn, pieces.FORMAT, after, _SWEEP_BATCH
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
    conn: AsyncConnection, _payload: dict[str, Any], spaces_found: list[str], *, env: JobEnv
) -> None:
    """Queues stored pieces for the large spaces without any in the current format: main's
    moves keep them up to date, but a space not edited since the upgrade that brought them
    (or a new format) would otherwise wait for its next edit."""
    for space_id in spaces_found:
        await _queue_snapshot(conn, space_id)
