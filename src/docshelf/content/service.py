"""Space content: reads of any revision (main, a change request's head, a revision by id), batch
writes into change requests or live onto main, merge and update."""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import gc
import logging
import posixpath
import re
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

import orjson
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from docshelf.authz.guard import not_found, require
from docshelf.blobs import OpenBlob
from docshelf.change_request import policy as cr_policy
from docshelf.change_request import repository as cr_repository
from docshelf.change_request.presenter import present_change_request
from docshelf.config import Settings
from docshelf.content import downloads, indexing, repository
from docshelf.content.edits import (
    MAX_URL_FILES,
    ChangeError,
    Editor,
    Outcome,
    page_link_targets,
    render_links,
)
from docshelf.content.lifecycle import collect_unless_kept
from docshelf.content.listing import pieces as listing
from docshelf.content.listing import stored as stored_listing
from docshelf.content.merge.revisions import merge_snapshots
from docshelf.content.presenter import (
    changed_file,
    changed_page,
    nest_pages,
    present_file,
    present_page,
    present_revision,
)
from docshelf.content.reusable import includes as reusable
from docshelf.content.schemas import (
    MEDIA_TYPE,
    ContentChanges,
    InsertFiles,
    InsertPage,
    InsertReusableContent,
    UpdatePage,
    UpdateReusableContent,
)
from docshelf.content.tree import hamt
from docshelf.content.tree.objects import ByteCache
from docshelf.content.tree.snapshot import ROOT, Record, Snapshot
from docshelf.document import markdown as md
from docshelf.document import model as document
from docshelf.document import parsing
from docshelf.events import event, outbox
from docshelf.events.event import user_ref
from docshelf.kit import metrics, offload
from docshelf.kit.clock import isoformat, utcnow
from docshelf.kit.context import Ctx, Staged
from docshelf.kit.db import unit_of_work
from docshelf.kit.errors import BadRequest, Conflict, Forbidden, SpaceLocked
from docshelf.kit.expressions import shows
from docshelf.kit.pagination import PageParams, page_in_memory
from docshelf.kit.sql import Row
from docshelf.review import service as review_service
from docshelf.space import policy as space_policy
from docshelf.space import repository as space_repository
from docshelf.space.policy import SpaceAccess

Format = Literal["markdown", "document"]


@dataclass(frozen=True)
class Where:
    """Which revision a read is about: main (nothing given), a change request, or a revision."""

    change_request: str | None = None
    revision: str | None = None


@dataclass
class Target:
    space: SpaceAccess
    revision: Row
    snap: Snapshot


async def target(ctx: Ctx, space_id: str, where: Where) -> Target:
    space = await space_policy.load(ctx, space_id)
    if where.change_request is not None:
        cr = await cr_repository.get(ctx.conn, space_id, where.change_request)
        if cr is None:
            not_found("Change request")
        revision_id = cr["revision_id"]
    else:
        revision_id = where.revision or space.row["revision_id"]
    if ctx.actor.reads is not None and revision_id != space.row["revision_id"]:
        # A site shows its spaces' current content: their history, drafts included, is not
        # published (a site content token: auth.site_token).
        not_found("Revision")
    row = await repository.get(ctx.conn, space_id, revision_id)
    if row is None:
        not_found("Revision")
    return Target(space, row, repository.snapshot(ctx.conn, row))


def _shown(ctx: Ctx, records: dict[str, Record]) -> dict[str, Record]:
    """What a site content token's visitor is shown of these page records: the pages whose
    condition fails for them left out (nest_pages then leaves out what is below them too).
    Anyone else reads every page."""
    reads = ctx.actor.reads
    if reads is None:
        return records
    return {pid: r for pid, r in records.items() if shows(r.get("condition"), reads.scope)}


async def _require_shown(ctx: Ctx, snap: Snapshot, rec: Record) -> None:
    """A page a site content token's visitor is not shown is, for them, no page (a 404)."""
    reads = ctx.actor.reads
    node: Record | None = rec
    while reads is not None and node is not None:
        if not shows(node.get("condition"), reads.scope):
            not_found("Page")
        parent = node.get("parent")
        node = await snap.page(parent) if parent else None


def _page_app_url(ctx: Ctx, space_id: str, page_id: str) -> str:
    return ctx.app_url(f"s/{space_id}/pages/{page_id}")


def _nest(
    ctx: Ctx, space_id: str, records: dict[str, Record], root: Record, top_path: str = ""
) -> list[dict[str, Any]]:
    prefix = _page_app_url(ctx, space_id, "")
    return nest_pages(records, root, top_path, lambda pid: prefix + pid)


async def _files_out(ctx: Ctx, space_id: str, files: list[Record]) -> list[dict[str, Any]]:
    sign = await downloads.signer(ctx.conn, ctx.base_url, space_id)
    return [present_file(f, sign(f)) for f in sorted(files, key=lambda f: f["id"])]


async def merged_from_of(ctx: Ctx, space_id: str, row: Row) -> dict[str, Any] | None:
    if row["type"] != "merge" or row["change_request_id"] is None or ctx.actor.reads is not None:
        # A site's visitor is not shown the change request behind its content (its subject,
        # who wrote and merged it).
        return None
    cr = await cr_repository.get(ctx.conn, space_id, row["change_request_id"])
    # A candidate left by a merge that had conflicts merged nothing.
    if cr is None or cr["revision_merged"] != row["id"]:
        return None
    return present_change_request(cr, ctx.base_url)


async def get_revision(ctx: Ctx, space_id: str, where: Where) -> dict[str, Any]:
    t = await target(ctx, space_id, where)
    files = await t.snap.all_files()
    reusables = await t.snap.all_reusables()
    return present_revision(
        t.revision,
        pages=await _pages(ctx, space_id, t.snap),
        files=await _files_out(ctx, space_id, list(files.values())),
        reusable_contents=[reusable.present(reusables[r]) for r in sorted(reusables)],
        app_url=ctx.app_url(f"s/{space_id}/revisions/{t.revision['id']}"),
        merged_from=await merged_from_of(ctx, space_id, t.revision),
    )


log = logging.getLogger("docshelf.content")

# A revision's pages never change, so a listing keyed by its pages map's root hash (and what
# else shapes the answer: the space in every URL, the base URL) is valid as long as it is kept.
# The encoded bytes are kept rather than the tree: a 10,000-page listing is 6.3 MB of JSON but
# several times that as Python objects, and even encoding it from its pieces costs ~15 ms.
_listings = ByteCache(Settings().listing_cache_mb * 1024 * 1024)
# The per-page pieces of each space's latest listed revision (content/listing/pieces.py): the first
# listing of a new revision decodes and encodes only the pages it changed.
_pieces = listing.PiecesCache(Settings().listing_pieces_mb * 1024 * 1024)


async def _pages_json(ctx: Ctx, space_id: str, snap: Snapshot) -> bytes:
    key = f"{space_id}\0{snap.pages_root or ''}\0{ctx.base_url}"
    data = _listings.get(key)
    if data is None:
        # A build makes a few objects a page, none of them in a cycle: the collector's passes
        # over the growing heap were half of a whole build's time.
        with _collector_paused():
            data = await _build_pages_json(ctx, space_id, snap)
        _listings.put(key, data)
    return data


async def _build_pages_json(ctx: Ctx, space_id: str, snap: Snapshot) -> bytes:
    base = _pieces.get(space_id)
    start = "memory"
    if base is None and await stored_listing.keeps_stored_pieces(snap):
        # None kept in this process: a large space's stored pieces (content.lifecycle), which
        # a few records away from this revision cost ~25 ms to list against ~100-180.
        stored = await repository.listing_snapshot(ctx.conn, space_id, listing.FORMAT)
        if stored is not None:
            base = listing.loads(stored["data"], stored["pages_root"])
        start = "stored"
    if base is None:
        start = "pages"

    async def build(base: listing.Pieces | None) -> tuple[listing.Pieces, bytes]:
        pieces = await listing.pieces_of(snap.store, snap.pages_root, base)
        return pieces, listing.encode(pieces, _page_app_url(ctx, space_id, ""))

    try:
        pieces, data = await build(base)
    except (ValueError, TypeError, IndexError):
        if start != "stored":
            raise
        # Stored bytes that unpack but are not pieces (FORMAT guards against our own
        # changes, not against a damaged value): what a space without them gets.
        log.warning("stored listing pieces of %s unreadable: built from the pages", space_id)
        start = "pages"
        pieces, data = await build(None)
    metrics.LISTING_BUILDS.labels(start).inc()
    _pieces.put(space_id, pieces)
    return data


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


async def list_pages(ctx: Ctx, space_id: str, where: Where) -> dict[str, Any]:
    t = await target(ctx, space_id, where)
    return {"pages": await _pages(ctx, space_id, t.snap)}


async def _pages(ctx: Ctx, space_id: str, snap: Snapshot) -> list[dict[str, Any]] | orjson.Fragment:
    """A revision's pages as listed (a listing's, a revision's): the kept listing, except for a
    visitor, whose listing depends on their claims (built for them, never kept)."""
    if ctx.actor.reads is None:
        return orjson.Fragment(await _pages_json(ctx, space_id, snap))
    records = _shown(ctx, await snap.all_pages())
    return _nest(ctx, space_id, records, await snap.root())


async def list_files(ctx: Ctx, space_id: str, where: Where, params: PageParams) -> dict[str, Any]:
    t = await target(ctx, space_id, where)
    files = list((await t.snap.all_files()).values())
    chunk, count, next_page = page_in_memory(
        files, key=lambda f: str(f["id"]), params=params, listing="files"
    )
    body: dict[str, Any] = {"items": await _files_out(ctx, space_id, chunk), "count": count}
    if next_page is not None:
        body["next"] = {"page": next_page}
    return body


async def get_file(ctx: Ctx, space_id: str, where: Where, file_id: str) -> dict[str, Any]:
    t = await target(ctx, space_id, where)
    rec = await t.snap.file(file_id)
    if rec is None:
        not_found("File")
    return (await _files_out(ctx, space_id, [rec]))[0]


async def _reusable_at(
    ctx: Ctx, space_id: str, where: Where, rc_id: str
) -> tuple[Snapshot, Record]:
    t = await target(ctx, space_id, where)
    rec = await t.snap.reusable(rc_id)
    if rec is None:
        not_found("Reusable content")
    return t.snap, rec


async def get_reusable(ctx: Ctx, space_id: str, where: Where, rc_id: str) -> dict[str, Any]:
    _, rec = await _reusable_at(ctx, space_id, where, rc_id)
    return reusable.present(rec)


async def get_reusable_document(
    ctx: Ctx, space_id: str, where: Where, rc_id: str
) -> dict[str, Any] | orjson.Fragment:
    """The reusable content's body as a GitBook JSONDocument."""
    snap, rec = await _reusable_at(ctx, space_id, where, rc_id)
    text = await snap.markdown(rec)
    await parsing.warm([text])
    return md.answered_document(text)


async def _present_one(
    ctx: Ctx,
    space_id: str,
    snap: Snapshot,
    rec: Record,
    fmt: Format,
    refs: str,
    dereferenced: bool = False,
) -> dict[str, Any]:
    await _require_shown(ctx, snap, rec)
    path = await snap.path(rec["id"])
    subtree = await snap.subtree(rec["id"])
    records = _shown(ctx, {r["id"]: r for r in subtree})
    prefix = path + "/"
    pages = _nest(ctx, space_id, records, rec, prefix)
    markdown: str | None = None
    document: dict[str, Any] | orjson.Fragment | None = None
    if rec["type"] == "document":
        text = await snap.markdown(rec)
        if dereferenced:
            text = await reusable.expand(snap, text)
        if refs == "relative" and fmt == "markdown":
            await parsing.warm([text])
            targets = page_link_targets(text)
            paths = {pid: await snap.path(pid) for pid in targets if await snap.page(pid)}
            text = render_links(text, paths, posixpath.dirname(path))
        if fmt == "document":
            await parsing.warm([text])
            document = md.answered_document(text)
        else:
            markdown = text
    return present_page(
        rec,
        path=path,
        pages=pages,
        app_url=_page_app_url(ctx, space_id, rec["id"]),
        markdown=markdown,
        document=document,
    )


async def get_page(
    ctx: Ctx,
    space_id: str,
    where: Where,
    page_id: str,
    fmt: Format,
    refs: str,
    *,
    dereferenced: bool = False,
) -> dict[str, Any]:
    t = await target(ctx, space_id, where)
    rec = await t.snap.page(page_id)
    if rec is None:
        not_found("Page")
    return await _present_one(ctx, space_id, t.snap, rec, fmt, refs, dereferenced)


async def get_page_meta_links(
    ctx: Ctx, space_id: str, where: Where, page_id: str
) -> dict[str, Any]:
    """GitBook's `RevisionPageMetaLinks`: the page's canonical and alternate addresses (other
    languages of it). Docshelf links no page to another, so a page has no alternates and is
    its own canonical page."""
    t = await target(ctx, space_id, where)
    rec = await t.snap.page(page_id)
    if rec is None:
        not_found("Page")
    await _require_shown(ctx, t.snap, rec)
    return {"alternates": []}


async def get_page_document(
    ctx: Ctx, space_id: str, where: Where, page_id: str, *, dereferenced: bool = False
) -> dict[str, Any] | orjson.Fragment:
    """A page's body as a GitBook JSONDocument (GitBook's `getPageDocumentInRevisionById`)."""
    t = await target(ctx, space_id, where)
    rec = await t.snap.page(page_id)
    if rec is None or rec["type"] != "document":
        not_found("Page")
    await _require_shown(ctx, t.snap, rec)
    text = await t.snap.markdown(rec)
    if dereferenced:
        text = await reusable.expand(t.snap, text)
    await parsing.warm([text])
    return md.answered_document(text)


async def get_page_by_path(
    ctx: Ctx,
    space_id: str,
    where: Where,
    path: str,
    fmt: Format,
    refs: str,
    *,
    dereferenced: bool = False,
) -> dict[str, Any]:
    t = await target(ctx, space_id, where)
    page_id = await t.snap.resolve_path(path)
    rec = None if page_id is None else await t.snap.page(page_id)
    if rec is None or rec["type"] == "link":
        not_found("Page")
    return await _present_one(ctx, space_id, t.snap, rec, fmt, refs, dereferenced)


# Semantic changes


async def changes(ctx: Ctx, space_id: str, where: Where, limit: int) -> dict[str, Any]:
    t = await target(ctx, space_id, where)
    merged_from = None
    if where.change_request is not None:
        cr = await cr_repository.get(ctx.conn, space_id, where.change_request)
        assert cr is not None
        base_id = cr["revision_merged_ancestor"] or cr["revision_initial"]
    else:
        parents = list(t.revision["parents"])
        base_id = parents[0] if parents else None
        merged_from = await merged_from_of(ctx, space_id, t.revision)
    base_row = None if base_id is None else await repository.get(ctx.conn, space_id, base_id)
    before = (
        Snapshot(t.snap.store, None, None)
        if base_row is None
        else repository.snapshot(ctx.conn, base_row)
    )
    items, total = await _semantic_changes(ctx, space_id, before, t.snap, limit)
    body: dict[str, Any] = {"changes": items}
    if total > limit:
        body["more"] = total - limit
    if merged_from is not None:
        body["mergedFrom"] = merged_from
    return body


_CHUNK = 100


def _page_change_count(a: Record, b: Record) -> int:
    """How many changes an edited page shows: a move, an edit, both or none (a record whose
    only change is its children shows nothing)."""
    moved = a["parent"] != b["parent"]
    edited = any(
        a.get(name) != b.get(name) for name in ("title", "description", "slug", "emoji", "markdown")
    )
    return int(moved) + int(edited)


async def _semantic_changes(
    ctx: Ctx, space_id: str, before: Snapshot, after: Snapshot, limit: int
) -> tuple[list[dict[str, Any]], int]:
    """The first `limit` changes (pages, then files, each in the maps' key-hash order) and how
    many there are.

    The diffs are read lazily: only the leaves holding the shown changes are read and presented
    (paths, parents); the rest are counted, pages or files present on one side only from the
    maps' entry counts without descending, and only records changed in place are read to see
    what changed. Work follows `limit` and the size of in-place edits, not the space."""
    out: list[dict[str, Any]] = []
    total = 0
    pages = hamt.DiffWalker(after.store, before.pages_root, after.pages_root)
    root_seen = False
    while len(out) <= limit and (batch := await pages.next_batch()) is not None:
        root_seen = root_seen or any(key == ROOT for key, _, _ in batch)
        ids = [key for key, _, _ in batch if key != ROOT]
        old = await before.pages(ids)
        new = await after.pages(ids)
        await _with_ancestors(before, old.values())
        await _with_ancestors(after, new.values())
        for pid in ids:
            found = await _page_changes(before, after, pid, old.get(pid), new.get(pid))
            total += len(found)
            out += found
    one_sided, in_place = await pages.rest()
    if not root_seen:
        # The root record is no page: a space's first revision creates it.
        in_place.pop(ROOT, None)
        if (before.pages_root is None) != (after.pages_root is None):
            one_sided -= 1
    total += one_sided
    ids = sorted(in_place)
    for start in range(0, len(ids), _CHUNK):
        chunk = ids[start : start + _CHUNK]
        old, new = await before.pages(chunk), await after.pages(chunk)
        total += sum(_page_change_count(old[p], new[p]) for p in chunk)

    files = hamt.DiffWalker(after.store, before.files_root, after.files_root)
    sign = None
    while len(out) <= limit and (fbatch := await files.next_batch()) is not None:
        fids = [key for key, _, _ in fbatch]
        old_files, new_files = await before.files(fids), await after.files(fids)
        sign = sign or await downloads.signer(ctx.conn, ctx.base_url, space_id)
        for fid in fids:
            fa, fb = old_files.get(fid), new_files.get(fid)
            total += 1
            if fa is None and fb is not None:
                out.append({"type": "file_created", "file": changed_file(fb, sign(fb))})
            elif fb is None and fa is not None:
                out.append({"type": "file_deleted", "file": changed_file(fa, sign(fa))})
            elif fb is not None:
                out.append({"type": "file_edited", "file": changed_file(fb, sign(fb))})
    one_sided, in_place = await files.rest()
    total += one_sided + len(in_place)
    # A space holds few reusable contents: their diff is read whole.
    diff = await hamt.diff(after.store, before.reusable_root, after.reusable_root)
    ids = sorted(diff)
    old_rc, new_rc = await before.reusables(ids), await after.reusables(ids)
    for rid in ids:
        item = _reusable_change(old_rc.get(rid), new_rc.get(rid))
        if item is not None:
            total += 1
            out.append(item)
    return out[:limit], total


def _reusable_change(a: Record | None, b: Record | None) -> dict[str, Any] | None:
    if a is None and b is not None:
        return {"type": "reusable_content_created", "reusableContent": reusable.present(b)}
    if b is None and a is not None:
        return {"type": "reusable_content_deleted", "reusableContent": reusable.present(a)}
    assert a is not None and b is not None
    attributes: dict[str, Any] = {}
    for name, field_name in (("title", "title"), ("document", "markdown")):
        if a.get(field_name) != b.get(field_name):
            attributes[name] = {
                k: v for k, v in (("before", a.get(field_name)), ("after", b.get(field_name))) if v
            }
    if not attributes:
        return None
    return {
        "type": "reusable_content_edited",
        "reusableContent": reusable.present(b),
        "attributes": attributes,
    }


async def _with_ancestors(snap: Snapshot, records: Iterable[Record]) -> None:
    """Loads the records' ancestors one tree level per batch, so their paths (and the parents
    a move names) read nothing more, instead of one map look-up per page and level."""
    wanted = {r["parent"] for r in records if r.get("parent")}
    while wanted:
        found = await snap.pages(wanted)
        wanted = {r["parent"] for r in found.values() if r.get("parent")} - set(found)


async def _page_changes(
    before: Snapshot, after: Snapshot, pid: str, a: Record | None, b: Record | None
) -> list[dict[str, Any]]:
    if a is None and b is not None:
        return [{"type": "page_created", "page": changed_page(b, await after.path(pid))}]
    if b is None and a is not None:
        return [{"type": "page_deleted", "page": changed_page(a, await before.path(pid))}]
    out: list[dict[str, Any]] = []
    if a is not None and b is not None:
        page = changed_page(b, await after.path(pid))
        if a["parent"] != b["parent"]:
            parent: dict[str, Any] = {}
            if a["parent"] and (pa := await before.page(a["parent"])):
                parent["before"] = changed_page(pa, await before.path(pa["id"]))
            if b["parent"] and (pb := await after.page(b["parent"])):
                parent["after"] = changed_page(pb, await after.path(pb["id"]))
            out.append({"type": "page_moved", "page": page, "parent": parent})
        attributes: dict[str, Any] = {}
        for name in ("title", "description", "slug", "emoji"):
            if a.get(name) != b.get(name):
                change = {}
                if a.get(name) is not None:
                    change["before"] = a[name]
                if b.get(name) is not None:
                    change["after"] = b[name]
                attributes[name] = change
        if a.get("markdown") != b.get("markdown"):
            attributes["document"] = {
                k: v for k, v in (("before", a.get("markdown")), ("after", b.get("markdown"))) if v
            }
        if attributes:
            out.append({"type": "page_edited", "page": page, "attributes": attributes})
    return out


# Writes


def require_content_edit(space: SpaceAccess) -> None:
    if space.row["edit_mode"] == "locked":
        raise SpaceLocked()
    require(cr_policy.can_edit(space.role, space.row["edit_mode"]), "You cannot edit this space")


FetchedFile = tuple[bytes, str | None] | BadRequest


async def _fetch_file(fetcher: Any, url: str) -> FetchedFile:
    try:
        fetched = await fetcher.fetch(url)
    except BadRequest as exc:
        return exc
    if not 200 <= fetched.status < 300:
        return BadRequest(f"the URL answered HTTP {fetched.status}")
    ctype = fetched.content_type
    valid = ctype and len(ctype) <= 255 and "\n" not in ctype and re.match(MEDIA_TYPE, ctype)
    return fetched.body, ctype if valid else None


async def prefetch_files(fetcher: Any, body: ContentChanges) -> dict[str, FetchedFile]:
    """Fetches the batch's files given by URL before any transaction opens, so no lock waits on
    the network. Only the first MAX_URL_FILES distinct URLs are fetched: the editor refuses a
    batch with more before it would ask for the rest. A failed fetch is kept as its error and
    raised by the editor at the change that named it, as before."""
    urls: list[str] = []
    for change in body.changes:
        if isinstance(change, InsertFiles):
            urls += [f.url for f in change.files if f.url is not None and f.url not in urls]
    urls = urls[:MAX_URL_FILES]
    results = await asyncio.gather(*(_fetch_file(fetcher, u) for u in urls))
    return dict(zip(urls, results, strict=True))


def _editor(
    ctx: Ctx, space_id: str, snap: Snapshot, *, revert_to: str | None, staged: StagedFiles
) -> Editor:
    async def fetch_file(url: str) -> tuple[bytes, str | None]:
        result = staged.fetched[url]
        if isinstance(result, BadRequest):
            raise result
        return result

    async def load_snapshot(revision_id: str) -> Snapshot | None:
        row = await repository.get(ctx.conn, space_id, revision_id)
        return None if row is None else repository.snapshot(ctx.conn, row)

    return Editor(
        snap,
        now=isoformat(utcnow()) or "",
        fetch_file=fetch_file,
        load_snapshot=load_snapshot,
        default_revert_to=revert_to,
    )


async def _apply(
    ctx: Ctx,
    space_id: str,
    head: Row,
    body: ContentChanges,
    *,
    revert_to: str | None,
    staged: StagedFiles,
) -> tuple[Snapshot, Outcome]:
    snap = repository.snapshot(ctx.conn, head)
    editor = _editor(ctx, space_id, snap, revert_to=revert_to, staged=staged)
    outcome = await editor.apply(body.changes)
    await snap.commit()
    await repository.store_blobs(ctx.conn, ctx.state.blobs, space_id, outcome.blobs, put=staged.put)
    return snap, outcome


async def _rehearse(st: Staged, space_id: str, body: ContentChanges, staged: StagedFiles) -> None:
    """Applies a batch to main's head without writing anything, and parses the bodies it would
    store (links rewritten) in a worker, so the real write finds their parses done instead of
    waiting on them with the space locked. Should main move meanwhile, the write still works;
    it may only have to parse."""
    async with st.read() as ctx:
        space = await space_policy.load(ctx, space_id)
        head = await repository.get(ctx.conn, space_id, space.row["revision_id"])
        if head is None:
            return
        parents = list(head["parents"])
        snap = repository.snapshot(ctx.conn, head)
        editor = _editor(
            ctx, space_id, snap, revert_to=parents[0] if parents else None, staged=staged
        )
        try:
            await editor.apply(body.changes)
        except (ChangeError, BadRequest):
            return  # the write reports it
        texts = await editor.final_texts()
    await parsing.warm(texts)


def _writable(cr: sa.RowMapping) -> None:
    if cr["status"] == "merged":
        raise Conflict("A merged change request cannot change")
    if cr["status"] == "archived":
        raise Conflict("An archived change request cannot change; reopen it first")


async def _update_body(
    ctx: Ctx, space_id: str, outcome: Outcome, cr: dict[str, Any] | None
) -> dict[str, Any]:
    def ref(page_id: str) -> dict[str, Any]:
        return {
            "object": "page",
            "id": page_id,
            "urls": {"location": ctx.api_url(f"spaces/{space_id}/content/page/{page_id}")},
        }

    items: list[dict[str, Any]] = []
    for name, page_id in outcome.created:
        item: dict[str, Any] = {"object": "created_page", "page": ref(page_id)}
        if name is not None:
            item["ref"] = name
        items.append(item)
    created = {pid for _, pid in outcome.created}
    items += [
        {"object": "updated_page", "page": ref(p)} for p in outcome.updated if p not in created
    ]
    items += [{"object": "deleted_page", "page": p} for p in outcome.deleted]
    body: dict[str, Any] = {"changes": items}
    if cr is not None:
        body["changeRequest"] = cr
    if outcome.files:
        body["insertedFiles"] = await _files_out(ctx, space_id, outcome.files)
    if outcome.reusables:
        body["insertedReusableContents"] = [
            {"id": rid, "ref": ref} if ref is not None else {"id": rid}
            for ref, rid in outcome.reusables
        ]
    return body


@dataclass
class StagedFiles:
    fetched: dict[str, FetchedFile]
    # Keys of the bytes already in the blob store.
    put: set[str]
    # Whether the batch holds a body too costly to parse on the event loop.
    costly: bool = False


# The changes whose body may come as markdown or as a JSON document.
_WITH_BODY = (InsertPage, UpdatePage, InsertReusableContent, UpdateReusableContent)


async def _documents_to_markdown(
    st: Staged, body: ContentChanges, check: Callable[[Ctx], Awaitable[None]]
) -> None:
    """Page bodies sent as GitBook JSON documents, validated and turned into the markdown the
    engine stores (document/model.py), before anything else looks at them. Large ones
    convert in a worker process, once the caller is known to be allowed."""
    bodies = [
        (n, c.document)
        for n, c in enumerate(body.changes)
        if isinstance(c, _WITH_BODY) and c.document is not None and c.document.document is not None
    ]
    if not bodies:
        return
    for n, d in bodies:
        if d.markdown is not None:
            raise BadRequest(f"changes[{n}].document: give markdown or document, not both")
    docs = [d.document for _, d in bodies]
    if any(document.costly(doc) for doc in docs):
        async with st.read() as ctx:
            await check(ctx)
        try:
            results = await offload.run(
                document.convert_many, docs, seconds=parsing.PARSE_SECONDS, lane="parse"
            )
        except (offload.OffloadTimeout, offload.OffloadCrashed, MemoryError) as exc:
            raise BadRequest("The document is too large to convert") from exc
    else:
        results = document.convert_many(docs)
    for (n, d), (text, error) in zip(bodies, results, strict=True):
        if error is not None:
            raise BadRequest(f"changes[{n}].document: {error}")
        d.markdown, d.document = text, None


async def _staged_files(
    st: Staged, body: ContentChanges, check: Callable[[Ctx], Awaitable[None]]
) -> StagedFiles:
    """The batch's files, fetched and put in the blob store, and its large page bodies parsed in
    a worker process (document/parsing.py), all with no transaction open, once the caller is
    known to be allowed (a refused caller makes us fetch, store and parse nothing)."""
    await _documents_to_markdown(st, body, check)
    files = [f for c in body.changes if isinstance(c, InsertFiles) for f in c.files]
    texts = [
        c.document.markdown
        for c in body.changes
        if isinstance(c, _WITH_BODY)
        and c.document is not None
        and c.document.markdown
        and md.costly(c.document.markdown)
    ]
    if not files and not texts:
        return StagedFiles({}, set())
    async with st.read() as ctx:
        await check(ctx)
    await parsing.warm(texts)
    if not files:
        return StagedFiles({}, set(), costly=bool(texts))
    fetched = await prefetch_files(st.state.fetcher, body)
    data = [r[0] for r in fetched.values() if not isinstance(r, BadRequest)]
    for f in files:
        if f.base64 is not None:
            with contextlib.suppress(binascii.Error, ValueError):
                data.append(base64.b64decode(f.base64, validate=True))
    return StagedFiles(
        fetched, await repository.put_blobs(st.state.blobs, data), costly=bool(texts)
    )


async def write_change_request(
    st: Staged, space_id: str, cr_ref: str, body: ContentChanges, *, compat: bool
) -> dict[str, Any]:
    async def check(ctx: Ctx) -> None:
        space = await space_policy.load(ctx, space_id)
        if await cr_repository.get(ctx.conn, space_id, cr_ref) is None:
            not_found("Change request")
        require_content_edit(space)

    staged = await _staged_files(st, body, check)
    async with collect_unless_kept(st.engine, staged.put), st.write() as ctx:
        return await _write_change_request(ctx, space_id, cr_ref, body, compat, staged)


async def _write_change_request(
    ctx: Ctx,
    space_id: str,
    cr_ref: str,
    body: ContentChanges,
    compat: bool,
    staged: StagedFiles,
) -> dict[str, Any]:
    space = await space_policy.load(ctx, space_id)
    found = await cr_repository.get(ctx.conn, space_id, cr_ref)
    if found is None:
        not_found("Change request")
    require_content_edit(space)
    await space_repository.lock_head(ctx.conn, space_id, share=True)
    cr = await cr_repository.lock(ctx.conn, found["id"])
    _writable(cr)
    head = await repository.get(ctx.conn, space_id, cr["revision_id"])
    assert head is not None
    snap, outcome = await _apply(
        ctx,
        space_id,
        head,
        body,
        revert_to=cr["revision_merged_ancestor"] or cr["revision_initial"],
        staged=staged,
    )
    now = utcnow()
    revision_id = await repository.insert(
        ctx.conn,
        space_id=space_id,
        type="edits",
        parents=[head["id"]],
        pages_root=snap.pages_root,
        files_root=snap.files_root,
        reusable_root=snap.reusable_root,
        author_id=ctx.actor.user_id,
        change_request_id=cr["id"],
        created_at=now,
    )
    await cr_repository.update(ctx.conn, cr["id"], {"revision_id": revision_id, "updated_at": now})
    await cr_repository.add_contributor(ctx.conn, cr["id"], ctx.actor.user_id)
    row = await cr_repository.get(ctx.conn, space_id, cr["id"])
    assert row is not None
    presented = present_change_request(row, ctx.base_url)
    if compat:
        return presented
    return await _update_body(ctx, space_id, outcome, presented)


def _require_live(space: SpaceAccess) -> None:
    require_content_edit(space)
    if space.row["edit_mode"] != "live":
        raise Forbidden(
            "Live editing is off for this space: set editMode to live, or use a change request"
        )


async def write_live(st: Staged, space_id: str, body: ContentChanges) -> dict[str, Any]:
    async def check(ctx: Ctx) -> None:
        _require_live(await space_policy.load(ctx, space_id))

    staged = await _staged_files(st, body, check)
    async with collect_unless_kept(st.engine, staged.put):
        if staged.costly:
            # Main's derived indexes parse the stored bodies inside the write: parse them now.
            await _rehearse(st, space_id, body, staged)
        async with st.write() as ctx:
            return await _write_live(ctx, space_id, body, staged)


async def _write_live(
    ctx: Ctx, space_id: str, body: ContentChanges, staged: StagedFiles
) -> dict[str, Any]:
    _require_live(await space_policy.load(ctx, space_id))
    head_id = await space_repository.lock_head(ctx.conn, space_id)
    if await space_repository.edit_mode(ctx.conn, space_id) != "live":
        raise Forbidden(
            "Live editing is off for this space: set editMode to live, or use a change request"
        )
    head = await repository.get(ctx.conn, space_id, head_id)
    assert head is not None
    parents = list(head["parents"])
    snap, outcome = await _apply(
        ctx, space_id, head, body, revert_to=parents[0] if parents else None, staged=staged
    )
    now = utcnow()
    revision_id = await repository.insert(
        ctx.conn,
        space_id=space_id,
        type="edits",
        parents=[head_id],
        pages_root=snap.pages_root,
        files_root=snap.files_root,
        reusable_root=snap.reusable_root,
        author_id=ctx.actor.user_id,
        created_at=now,
    )
    await _advance_main(ctx, space_id, head, revision_id, snap, now)
    out = await _update_body(ctx, space_id, outcome, None)
    return {"revision": revision_id, **out}


async def _advance_main(
    ctx: Ctx,
    space_id: str,
    old_head: Row,
    revision_id: str,
    after: Snapshot,
    now: datetime,
) -> None:
    """Moves main to a new revision and brings what is derived from it (links, search) along,
    in the same transaction."""
    await repository.set_head(ctx.conn, space_id, revision_id, now)
    await indexing.main_moved(ctx.conn, space_id, repository.snapshot(ctx.conn, old_head), after)
    updated_by = [user_ref(ctx.actor.user_id, ctx.actor.display_name)]
    await outbox.emit(
        ctx,
        event.SPACE_CONTENT_UPDATED,
        space=space_id,
        data={"revisionId": revision_id, "updatedBy": updated_by},
    )


async def write_edits(
    ctx: Ctx,
    space_id: str,
    edit: Callable[[Editor], Awaitable[None]],
    *,
    base: str,
    change_request_id: str | None = None,
) -> str | None:
    """A batch another domain drives on an editor (a git push: gitsync/) applied as one
    revision of main, or of a change request, in the caller's transaction. `base` is the
    revision the batch was worked out against: Conflict when that line has moved since, since
    the batch would then undo what came in between. The new revision's id, or None when the
    batch changed nothing."""
    if change_request_id is None:
        head_id = await space_repository.lock_head(ctx.conn, space_id)
        if head_id != base:
            raise Conflict("main has moved since: fetch, then push again")
        head = await repository.get(ctx.conn, space_id, head_id)
        assert head is not None
        parents = list(head["parents"])
        revert_to = parents[0] if parents else None
    else:
        await space_repository.lock_head(ctx.conn, space_id, share=True)
        cr = await cr_repository.lock(ctx.conn, change_request_id)
        _writable(cr)
        if cr["revision_id"] != base:
            raise Conflict("the change request has moved since: fetch, then push again")
        head = await repository.get(ctx.conn, space_id, cr["revision_id"])
        assert head is not None
        revert_to = cr["revision_merged_ancestor"] or cr["revision_initial"]
    snap = repository.snapshot(ctx.conn, head)
    editor = _editor(ctx, space_id, snap, revert_to=revert_to, staged=StagedFiles({}, set()))
    await edit(editor)
    outcome = await editor.finish()
    if not snap.changed:
        return None
    await snap.commit()
    await repository.store_blobs(ctx.conn, ctx.state.blobs, space_id, outcome.blobs)
    now = utcnow()
    revision_id = await repository.insert(
        ctx.conn,
        space_id=space_id,
        type="edits",
        parents=[head["id"]],
        pages_root=snap.pages_root,
        files_root=snap.files_root,
        reusable_root=snap.reusable_root,
        author_id=ctx.actor.user_id,
        change_request_id=change_request_id,
        created_at=now,
    )
    if change_request_id is None:
        await _advance_main(ctx, space_id, head, revision_id, snap, now)
    else:
        await cr_repository.update(
            ctx.conn, change_request_id, {"revision_id": revision_id, "updated_at": now}
        )
        await cr_repository.add_contributor(ctx.conn, change_request_id, ctx.actor.user_id)
    return revision_id


# Merge and update


def _conflicts_out(
    conflicts: Any, records: dict[str, Record], key: str = "page", label: str = "title"
) -> list[dict[str, Any]]:
    out = []
    for c in conflicts:
        item: dict[str, Any] = {key: c.page_id, "kind": c.kind}
        if c.page_id in records:
            item[label] = records[c.page_id][label]
        if c.field is not None:
            item["field"] = "document" if c.field == "markdown" else c.field
        if c.detail:
            item["detail"] = c.detail
        out.append(item)
    return out


@dataclass
class _ThreeWay:
    """A merge of a change request with main, in either direction, stored as a revision."""

    revision_id: str
    main: Row
    after: Snapshot
    conflicts: dict[str, Any] | None
    now: datetime


async def _three_way(
    ctx: Ctx, space_id: str, cr: sa.RowMapping, main_id: str, *, into_main: bool
) -> _ThreeWay:
    """Merges the change request's head and main over their base. Into main, main is `ours`
    (it wins what cannot be combined); into the change request (update), the head is."""
    base_id = cr["revision_merged_ancestor"] or cr["revision_initial"]
    base, main, head = [
        await repository.get(ctx.conn, space_id, r) for r in (base_id, main_id, cr["revision_id"])
    ]
    assert base is not None and main is not None and head is not None
    ours, theirs = (main, head) if into_main else (head, main)
    now = utcnow()
    merged = await merge_snapshots(
        repository.snapshot(ctx.conn, base),
        repository.snapshot(ctx.conn, ours),
        repository.snapshot(ctx.conn, theirs),
        now=isoformat(now) or "",
    )
    revision_id = await repository.insert(
        ctx.conn,
        space_id=space_id,
        type="merge" if into_main else "update",
        parents=[ours["id"], theirs["id"]],
        pages_root=merged.pages_root,
        files_root=merged.files_root,
        reusable_root=merged.reusable_root,
        author_id=ctx.actor.user_id,
        change_request_id=cr["id"],
        created_at=now,
    )
    conflicts = None
    if merged.conflicts or merged.reusable_conflicts or merged.file_conflicts:
        wanted = [c.page_id for c in merged.conflicts]
        records = {
            **await repository.snapshot(ctx.conn, main).pages(wanted),
            **await repository.snapshot(ctx.conn, head).pages(wanted),
        }
        rc_wanted = [c.page_id for c in merged.reusable_conflicts]
        rc_records = {
            **await repository.snapshot(ctx.conn, main).reusables(rc_wanted),
            **await repository.snapshot(ctx.conn, head).reusables(rc_wanted),
        }
        files = await repository.snapshot(ctx.conn, main).files(
            [c.page_id for c in merged.file_conflicts]
        )
        conflicts = {
            "revision": revision_id,
            "result": "conflicts",
            "conflicts": _conflicts_out(merged.conflicts, records)
            + _conflicts_out(merged.reusable_conflicts, rc_records, key="reusableContent")
            + _conflicts_out(merged.file_conflicts, files, key="file", label="name"),
        }
    store = repository.snapshot(ctx.conn, main).store
    after = Snapshot(store, merged.pages_root, merged.files_root, merged.reusable_root)
    return _ThreeWay(revision_id, main, after, conflicts, now)


async def merge(ctx: Ctx, space_id: str, cr_ref: str) -> dict[str, Any]:
    space = await space_policy.load(ctx, space_id)
    found = await cr_repository.get(ctx.conn, space_id, cr_ref)
    if found is None:
        not_found("Change request")
    if space.row["edit_mode"] == "locked":
        raise SpaceLocked()
    require(cr_policy.can_merge(space.role), "You cannot merge change requests in this space")
    main_id = await space_repository.lock_head(ctx.conn, space_id)
    cr = await cr_repository.lock(ctx.conn, found["id"])
    _writable(cr)
    await review_service.enforce_merge_rules(ctx, space_id, cr, main_id)
    done = await _three_way(ctx, space_id, cr, main_id, into_main=True)
    if done.conflicts is not None:
        return done.conflicts
    await _advance_main(ctx, space_id, done.main, done.revision_id, done.after, done.now)
    await cr_repository.update(
        ctx.conn,
        cr["id"],
        {
            "status": "merged",
            "revision_merged": done.revision_id,
            "updated_at": done.now,
            "merged_by": ctx.actor.user_id,
            "merged_at": done.now,
        },
    )
    await cr_repository.count_status_change(ctx.conn, space_id, cr["status"], "merged")
    await outbox.emit(
        ctx,
        event.CHANGE_REQUEST_STATUS_UPDATED,
        space=space_id,
        data={
            "changeRequestId": cr["id"],
            "number": cr["number"],
            "status": "merged",
            "previousStatus": cr["status"],
        },
    )
    return {"revision": done.revision_id, "result": "merge"}


async def update(ctx: Ctx, space_id: str, cr_ref: str) -> dict[str, Any]:
    space = await space_policy.load(ctx, space_id)
    found = await cr_repository.get(ctx.conn, space_id, cr_ref)
    if found is None:
        not_found("Change request")
    require_content_edit(space)
    main_id = await space_repository.lock_head(ctx.conn, space_id)
    cr = await cr_repository.lock(ctx.conn, found["id"])
    _writable(cr)
    if (cr["revision_merged_ancestor"] or cr["revision_initial"]) == main_id:
        return {"revision": cr["revision_id"], "result": "update"}
    done = await _three_way(ctx, space_id, cr, main_id, into_main=False)
    if done.conflicts is not None:
        return done.conflicts
    await cr_repository.update(
        ctx.conn,
        cr["id"],
        {
            "revision_id": done.revision_id,
            "revision_merged_ancestor": main_id,
            "updated_at": done.now,
        },
    )
    return {"revision": done.revision_id, "result": "update"}


async def rebase_change_request(
    ctx: Ctx, space_id: str, change_request_id: str, *, base: str, onto: str
) -> str:
    """Main's revision `onto` merged into the change request, as `update` merges main's head,
    in the caller's transaction: what a git merge of main into its branch brings (gitsync/),
    before the merged tree pushed is applied on it. Its merges then start from `onto`, so
    what main had by then is not the change request's own, and what it added keeps its ids.
    Where both changed the same thing its side stands: the tree pushed says how git resolved
    it. `base` is the head the caller worked from (Conflict when it has moved since). The new
    head's id."""
    await space_repository.lock_head(ctx.conn, space_id, share=True)
    cr = await cr_repository.lock(ctx.conn, change_request_id)
    _writable(cr)
    if cr["revision_id"] != base:
        raise Conflict("the change request has moved since: fetch, then push again")
    done = await _three_way(ctx, space_id, cr, onto, into_main=False)
    await cr_repository.update(
        ctx.conn,
        cr["id"],
        {"revision_id": done.revision_id, "revision_merged_ancestor": onto, "updated_at": done.now},
    )
    return done.revision_id


async def download(engine: AsyncEngine, blobs: Any, token: str) -> tuple[OpenBlob, str, str]:
    async with unit_of_work(engine, write=False) as conn:
        claims = await downloads.open_token(conn, token)
    opened: OpenBlob | None = await blobs.open(claims["b"])
    if opened is None:
        not_found("File")
    return opened, str(claims["t"]), str(claims["n"])
