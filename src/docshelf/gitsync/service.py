"""A space served as a git repository: its revisions as commits, main and the open change
requests as branches, a push applied as edits of main or of a change request.

Objects are built from the content engine on the event loop (reads), the protocol and its packs
run in a thread (dulwich's handlers are blocking code); a push's refs are applied by an update
hook that hands each one back to the event loop, in a transaction of its own.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import io
import logging
import threading
from collections.abc import (
    AsyncIterator,
    Callable,
    Coroutine,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from dataclasses import dataclass, field, replace
from datetime import UTC
from typing import Any

import pydantic
import sqlalchemy as sa
from dulwich.errors import HookError
from dulwich.hooks import Hook
from dulwich.object_store import MemoryObjectStore
from dulwich.objects import Blob, Commit, ObjectID, RawObjectID, ShaFile
from dulwich.protocol import ReceivableProtocol
from dulwich.refs import Ref
from dulwich.repo import MemoryRepo
from dulwich.server import DictBackend, ReceivePackHandler, UploadPackHandler
from sqlalchemy.ext.asyncio import AsyncEngine

import docshelf.document.markdown as md
from docshelf.auth.service import authenticate
from docshelf.change_request import presenter as cr_presenter
from docshelf.change_request import service as cr_service
from docshelf.change_request.schemas import CreateChangeRequest
from docshelf.content import repository as content_repository
from docshelf.content import service as content_service
from docshelf.content.edits import Editor
from docshelf.content.schemas import (
    DeletePage,
    DeleteReusableContent,
    FileInput,
    InsertFiles,
    InsertPage,
    InsertReusableContent,
    UpdatePage,
    UpdateReusableContent,
)
from docshelf.content.tree import hamt
from docshelf.content.tree.snapshot import ROOT, Record, Snapshot
from docshelf.document import parsing
from docshelf.gitsync import layout, repository
from docshelf.gitsync import objects as git
from docshelf.kit.context import Ctx
from docshelf.kit.db import unit_of_work
from docshelf.kit.errors import BadRequest, Conflict, Forbidden, NotFound, Unauthorized
from docshelf.kit.lru import SizedLRU, counted
from docshelf.kit.sql import Row
from docshelf.review import service as review_service
from docshelf.space import policy as space_policy
from docshelf.space import presenter as space_presenter
from docshelf.space.policy import SpaceAccess

log = logging.getLogger("docshelf.gitsync")
# dulwich logs each request's capabilities at INFO: the access line already says what came.
logging.getLogger("dulwich").setLevel(logging.WARNING)

MAIN = Ref(b"refs/heads/main")
BRANCH_PREFIX = "change-requests/"
ZERO = b"0" * 40
UPLOAD = "git-upload-pack"
RECEIVE = "git-receive-pack"

# Page and asset files by what they are made of: a revision that changes one page makes one
# new blob, every other file is the blob made for an earlier revision (bounded by bytes).
_BLOBS: SizedLRU[tuple[Any, ...], Blob] = SizedLRU(64 * 1024 * 1024, lambda b: b.raw_length())


@dataclass(frozen=True, slots=True)
class _Built:
    """A revision's tree: its id, its objects, its files and each document page's path, and
    the maps it was made from (what the next revision's is compared with)."""

    tree_id: bytes
    objects: tuple[ShaFile, ...]
    files: dict[str, bytes | Blob]
    paths: dict[str, str]
    roots: tuple[str | None, str | None, str | None]
    records: dict[str, Record]  # the page records by id, the root's under ROOT


# Revisions are immutable: their trees are kept by revision id, the latest few (a tree is made
# from its parent's, built just before it; each holds a dict of its files).
_TREES: SizedLRU[str, _Built] = counted(16)
# What a page's file and place in SUMMARY.md depend on beyond its body and its front matter.
_SHAPE = ("parent", "children", "slug", "title", "type", "href")

_SUBJECTS = {
    "edits": "Edit the content",
    "merge": "Merge a change request",
    "update": "Bring a change request up to date with main",
    "rollback": "Roll back the content",
}


class GitRefusal(Exception):
    """A ref of a push refused: the message is the line git prints."""


# Who calls


def basic_token(authorization: str | None) -> str:
    """The API token of `Authorization: Basic base64(user:token)` (the user name is ignored),
    or of `Bearer <token>`; Unauthorized (git then asks for credentials) without one."""
    if not authorization:
        raise Unauthorized("Authentication required: use an API token as the password")
    scheme, _, value = authorization.strip().partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        return value.strip()
    if scheme.lower() != "basic":
        raise Unauthorized("Use HTTP basic authentication with an API token as the password")
    try:
        decoded = base64.b64decode(value.strip(), validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        raise Unauthorized("Malformed basic credentials") from None
    _, _, token = decoded.partition(":")
    if not token:
        raise Unauthorized("Authentication required: use an API token as the password")
    return token


async def open_space(
    conn: Any, state: Any, base_url: str, authorization: str | None, org_id: str, space_id: str
) -> tuple[Ctx, SpaceAccess]:
    actor = await authenticate(conn, basic_token(authorization))
    if actor.reads is not None:
        raise NotFound("Space not found")  # a site content token reads published pages only
    ctx = Ctx(conn=conn, actor=actor, base_url=base_url, state=state)
    space = await space_policy.load(ctx, space_id)
    if space.row["organization_id"] != org_id:
        raise NotFound("Space not found")
    return ctx, space


# The space as files


def _page(rec: Record, parent: str | None, markdown: str = "") -> layout.Page:
    return layout.Page(
        key=rec["id"],
        parent=parent,
        type=rec["type"],
        title=rec.get("title") or "Untitled",
        slug=rec["slug"],
        emoji=rec.get("emoji"),
        icon=rec.get("icon"),
        description=rec.get("description"),
        hidden=bool(rec.get("hidden")),
        href=rec.get("href") if rec["type"] == "link" else None,
        markdown=markdown if rec["type"] == "document" else "",
    )


async def _assets(snap: Snapshot) -> list[tuple[Record, str]]:
    """The files of the revision with their names under .gitbook/assets/, oldest first."""
    records = sorted((await snap.all_files()).values(), key=lambda r: (r["createdAt"], r["id"]))
    taken: set[str] = set()
    return [(rec, layout.asset_name(rec["name"], taken)) for rec in records]


def _fields(page: layout.Page) -> dict[str, Any]:
    return {name: getattr(page, name) for name in layout.Page.__slots__}


async def _reusables(snap: Snapshot) -> list[layout.Reusable]:
    records = await snap.all_reusables()
    texts = await snap.markdowns([r["markdown"] for r in records.values() if r.get("markdown")])
    return [
        layout.Reusable(
            rid, rec.get("title") or "Untitled", texts.get(rec.get("markdown") or "", "")
        )
        for rid, rec in records.items()
    ]


def _roots(row: Row) -> tuple[str | None, str | None, str | None]:
    return (row["pages_root"], row["files_root"], row["reusable_root"])


async def _page_blobs(
    snap: Snapshot, records: dict[str, Record], paths: dict[str, str], ids: Iterable[str]
) -> dict[str, Blob]:
    """The files of pages `ids` at their paths: those made already taken from the cache, the
    bodies of the others read in one go."""
    out: dict[str, Blob] = {}
    missing: dict[str, tuple[Any, ...]] = {}
    for page_id in ids:
        rec, path = records[page_id], paths[page_id]
        fields = _fields(_page(rec, rec.get("parent")))
        key = ("page", rec.get("markdown"), path, *fields.values())
        found = _BLOBS.get(key)
        if found is None:
            missing[page_id] = key
        else:
            out[page_id] = found
    wanted = [records[k]["markdown"] for k in missing if records[k].get("markdown")]
    texts = await snap.markdowns(wanted) if wanted else {}
    for page_id, key in missing.items():
        rec = records[page_id]
        text = texts.get(rec.get("markdown") or "", "")
        page = layout.Page(**{**_fields(_page(rec, rec.get("parent"))), "markdown": text})
        made = git.blob(layout.page_file(page, paths[page_id]))
        _BLOBS.put(key, made)
        out[page_id] = made
    return out


async def _built(
    files: dict[str, bytes | Blob],
    paths: dict[str, str],
    records: dict[str, Record],
    row: Row,
) -> _Built:
    made: dict[bytes, ShaFile] = {}
    tree_id = await asyncio.to_thread(git.tree, files, lambda obj: made.__setitem__(obj.id, obj))
    built = _Built(tree_id, tuple(made.values()), files, paths, _roots(row), records)
    _TREES.put(row["id"], built)
    return built


async def _records(snap: Snapshot, row: Row) -> dict[str, Record]:
    """Every page record of the revision (the root's under ROOT): its parent's with what the
    maps' diff says changed, when the parent's were read; else read whole."""
    parent = _TREES.get(row["parents"][0]) if row["parents"] else None
    if parent is not None:
        diff = await hamt.diff(snap.store, parent.roots[0], row["pages_root"])
        loaded = await snap.store.get_json({new for _, new in diff.values() if new})
        records = dict(parent.records)
        for page_id, (_, new) in diff.items():
            if new is None:
                records.pop(page_id, None)
            else:
                records[page_id] = loaded[new]
        return records
    entries = await hamt.items(snap.store, row["pages_root"])
    loaded = await snap.store.get_json(set(entries.values()))
    return {page_id: loaded[h] for page_id, h in entries.items()}


def _walk(records: dict[str, Record]) -> list[layout.Page]:
    """The pages parents first, each parent's children in order (bodies not read)."""
    pages: list[layout.Page] = []
    top = (records.get(ROOT) or {}).get("children") or []
    stack: list[tuple[str, str | None]] = [(cid, None) for cid, _ in reversed(top)]
    while stack:
        cid, parent = stack.pop()
        rec = records.get(cid)
        if rec is None:
            continue
        pages.append(_page(rec, parent))
        stack += [(kid, cid) for kid, _ in reversed(rec.get("children") or [])]
    return pages


async def _from_parent(ctx: Ctx, row: Row) -> _Built | None:
    """The revision's tree from its first parent's, when only page bodies and front matter
    changed between them (an edit of a few pages): the pages that changed are read and made
    again, the rest is the parent's. None when the structure changed (a rebuild is needed)."""
    parent = _TREES.get(row["parents"][0]) if row["parents"] else None
    if parent is None or parent.roots[1:] != _roots(row)[1:]:
        return None
    snap = content_repository.snapshot(ctx.conn, row)
    diff = await hamt.diff(snap.store, parent.roots[0], row["pages_root"])
    # Pages changed in place (none added or removed, the root's children the same).
    changed = {k: (old, new) for k, (old, new) in diff.items() if old and new and k != ROOT}
    if len(changed) != len(diff):
        return None
    records = await snap.store.get_json({h for pair in changed.values() for h in pair})
    for old, new in changed.values():
        before, after = records[old], records[new]
        if any(before.get(name) != after.get(name) for name in _SHAPE):
            return None
    after = dict(parent.records)
    after.update({page_id: records[new] for page_id, (_, new) in changed.items()})
    files = dict(parent.files)
    made = await _page_blobs(snap, after, parent.paths, [k for k in changed if k in parent.paths])
    for page_id, blob in made.items():
        files[parent.paths[page_id]] = blob
    return await _built(files, parent.paths, after, row)


async def _tree_of(ctx: Ctx, row: Row) -> _Built:
    """The tree of a revision: from its parent's when it can be, else made whole, with the
    blob of every page whose file is unchanged taken from those already made."""
    cached = _TREES.get(row["id"])
    if cached is not None:
        return cached
    incremental = await _from_parent(ctx, row)
    if incremental is not None:
        return incremental
    snap = content_repository.snapshot(ctx.conn, row)
    records = await _records(snap, row)
    shape = layout.Space(tuple(_walk(records)))
    paths = layout.page_paths(shape)
    files: dict[str, bytes | Blob] = {
        layout.CONFIG: layout.CONFIG_TEXT,
        layout.SUMMARY: layout.summary(shape, paths),
    }
    made = await _page_blobs(snap, records, paths, paths)
    for page_id, path in paths.items():
        files[path] = made[page_id]
    reusables = layout.Space(reusables=tuple(await _reusables(snap)))
    rpaths = layout.reusable_paths(reusables)
    for item in reusables.reusables:
        files[rpaths[item.key]] = layout.reusable_file(item)
    for rec, name in await _assets(snap):
        key = ("asset", rec["blob"])
        found = _BLOBS.get(key)
        if found is None:
            found = git.blob(await ctx.state.blobs.get(rec["blob"]) or b"")
            _BLOBS.put(key, found)
        files[f"{layout.ASSETS}{name}"] = found
    return await _built(files, paths, records, row)


def _identity(name: str | None, email: str | None) -> bytes:
    clean = (name or "Docshelf").replace("<", "").replace(">", "").replace("\n", " ").strip()
    return f"{clean or 'Docshelf'} <{email or 'docshelf@localhost'}>".encode()


def _commit(row: sa.RowMapping, tree_id: bytes, parents: Sequence[bytes]) -> Commit:
    if row["author"] is not None and row["pushed"] is None:
        # A revision a push made: the commit pushed, to the byte.
        return git.commit(
            tree_id,
            parents,
            git.Signature(row["author"], row["author_time"], row["author_timezone"]),
            git.Signature(row["committer"], row["commit_time"], row["commit_timezone"]),
            row["message"],
        )
    created = row["created_at"]
    if created.tzinfo is None:  # stored as UTC: the same seconds whatever the machine's zone
        created = created.replace(tzinfo=UTC)
    who = git.Signature(_identity(row["display_name"], row["email"]), int(created.timestamp()))
    if row["pushed"] is not None:
        # The files pushed, as the space keeps them: one commit on top of the writer's.
        message = (
            f"Keep the pushed files as the space stores them\n\nDocshelf-Revision: {row['id']}\n"
        )
        return git.commit(tree_id, [row["pushed"].encode()], who, who, message.encode())
    subject = _SUBJECTS.get(row["type"], "Change the content")
    message = f"{subject}\n\nDocshelf-Revision: {row['id']}\n"
    return git.commit(tree_id, parents, who, who, message.encode())


@dataclass
class _History:
    """What a process has built of a space's history: objects only ever added (each one is a
    function of immutable revisions), so a fetch after an edit builds the new revision alone."""

    store: MemoryObjectStore
    commit_of: dict[str, ObjectID] = field(default_factory=dict)
    revision_of: dict[bytes, str] = field(default_factory=dict)
    ours: set[bytes] = field(default_factory=set)
    size: int = 0  # bytes of the objects held

    def add(self, obj: ShaFile) -> None:
        if obj.id not in self.ours:
            self.store.add_object(obj)
            self.ours.add(obj.id)
            self.size += obj.raw_length() + 200  # the object's bytes and its parsed form


class _Layer(MemoryObjectStore):
    """A request's store: its own objects over the process's kept history. What a push or a
    fetch brings (in the protocol's thread) is added here, to be dropped with the request; the
    history, shared by the requests and syncs of the space, is only read through it."""

    def __init__(self, base: MemoryObjectStore) -> None:
        super().__init__(object_format=base.object_format)
        self.base = base

    def contains_loose(self, sha: ObjectID) -> bool:
        return super().contains_loose(sha) or self.base.contains_loose(sha)

    def __getitem__(self, name: ObjectID | RawObjectID) -> ShaFile:
        # get_raw, and so every read of the store, comes here.
        try:
            return super().__getitem__(name)
        except KeyError:
            return self.base[name]

    def __iter__(self) -> Iterator[ObjectID]:
        own = set(super().__iter__())
        yield from own
        yield from (sha for sha in self.base if sha not in own)


# By space, bounded by the bytes of the objects held (a history larger than the whole budget
# is built for its request and not kept).
_HISTORIES: SizedLRU[str, _History] = SizedLRU(256 * 1024 * 1024, lambda h: h.size)


@dataclass
class Served:
    """The repository a request sees: every object of the history its refs reach."""

    repo: MemoryRepo
    main: str  # main's revision
    commit_of: dict[str, ObjectID] = field(default_factory=dict)  # revision -> commit
    revision_of: dict[bytes, str] = field(default_factory=dict)  # commit -> revision
    branches: dict[str, sa.RowMapping] = field(default_factory=dict)  # branch -> change request
    ours: set[bytes] = field(default_factory=set)  # every object served (a push adds others)
    # main's revisions by how far back from its head they are (0: the head)
    main_rank: dict[str, int] = field(default_factory=dict)


def branch_of(cr: sa.RowMapping) -> str:
    return str(cr["name"] or f"{BRANCH_PREFIX}{cr['number']}")


async def served(ctx: Ctx, space: SpaceAccess) -> Served:
    space_id = space.row["id"]
    rows = {r["id"]: r for r in await repository.revisions_of(ctx.conn, space_id)}
    crs = await repository.open_change_requests(ctx.conn, space_id)
    repo = MemoryRepo()
    out = Served(repo, space.row["revision_id"])
    heads: dict[Ref, str] = {}
    if out.main in rows:
        heads[MAIN] = out.main
    for cr in crs:
        if cr["revision_id"] in rows:
            name = branch_of(cr)
            out.branches[name] = cr
            heads[Ref(f"refs/heads/{name}".encode())] = cr["revision_id"]
    # Parents before children: an iterative depth-first walk from every head.
    order: list[str] = []
    seen: set[str] = set()
    for head in heads.values():
        stack: list[tuple[str, bool]] = [(head, False)]
        while stack:
            rid, done = stack.pop()
            if done:
                order.append(rid)
                continue
            if rid in seen or rid not in rows:
                continue
            seen.add(rid)
            stack.append((rid, True))
            stack += [(p, False) for p in reversed(rows[rid]["parents"]) if p not in seen]
    history = _HISTORIES.get(space_id) or _History(MemoryObjectStore())
    repo.object_store = _Layer(history.store)
    for kept in await repository.objects_of(ctx.conn, space_id):
        if kept["sha"].encode() not in history.ours:
            history.add(ShaFile.from_raw_string(kept["type_num"], kept["data"]))
    for rid in order:
        if rid in history.commit_of:
            continue
        row = rows[rid]
        built = await _tree_of(ctx, row)
        for obj in built.objects:
            history.add(obj)
        parents = [history.commit_of[p] for p in row["parents"] if p in history.commit_of]
        commit = _commit(row, built.tree_id, parents)
        history.add(commit)
        history.commit_of[rid] = commit.id
        history.revision_of[commit.id] = rid
    _HISTORIES.put(space_id, history)  # again: its size has changed
    out.commit_of, out.revision_of, out.ours = (
        history.commit_of,
        history.revision_of,
        history.ours,
    )
    line: str | None = out.main if out.main in rows else None
    while line is not None:
        out.main_rank[line] = len(out.main_rank)
        parents = rows[line]["parents"]
        line = parents[0] if parents and parents[0] in rows else None
    for ref, rid in heads.items():
        repo.refs[ref] = out.commit_of[rid]
    if MAIN in heads:
        repo.refs.set_symbolic_ref(Ref(b"HEAD"), MAIN)
    return out


# The protocol


def _backend(repo: MemoryRepo) -> DictBackend:
    repos: dict[str, Any] = {"/": repo}
    return DictBackend(repos)


def advertisement(repo: MemoryRepo, service: str) -> bytes:
    out = io.BytesIO()
    proto = ReceivableProtocol(io.BytesIO().read, out.write)
    handler_cls = UploadPackHandler if service == UPLOAD else ReceivePackHandler
    handler = handler_cls(_backend(repo), ["/"], proto, stateless_rpc=True, advertise_refs=True)
    proto.write_pkt_line(f"# service={service}\n".encode())
    proto.write_pkt_line(None)
    handler.handle()
    return out.getvalue()


def run_service(repo: MemoryRepo, service: str, body: bytes) -> bytes:
    """One stateless request of the protocol (blocking: run it in a thread)."""
    out = io.BytesIO()
    proto = ReceivableProtocol(io.BytesIO(body).read, out.write)
    handler_cls = UploadPackHandler if service == UPLOAD else ReceivePackHandler
    handler = handler_cls(_backend(repo), ["/"], proto, stateless_rpc=True)
    handler.handle()
    return out.getvalue()


class _UpdateHook(Hook):
    """dulwich's update hook, called in the protocol's thread for each ref pushed: the ref is
    applied on the event loop; a refusal becomes the `ng <ref> <reason>` line git prints."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        apply: Callable[[bytes, bytes, bytes], Coroutine[Any, Any, str]],
    ) -> None:
        self.loop = loop
        self.apply = apply

    def execute(self, *args: Any) -> Any:
        ref, old, new = args
        future = asyncio.run_coroutine_threadsafe(self.apply(ref, old, new), self.loop)
        try:
            said = future.result()
        except GitRefusal as exc:
            raise HookError(str(exc)) from None
        except Exception:
            # Rolled back: the writer is told, the operator finds the cause in the log.
            log.exception("a git push to %s failed", ref.decode("utf-8", "replace"))
            raise HookError("the server failed to apply this push") from None
        return (f"Docshelf: {said}\n".encode(), b"")


# Reading and pushing


async def read(
    engine: AsyncEngine,
    state: Any,
    base_url: str,
    authorization: str | None,
    org_id: str,
    space_id: str,
    service: str,
) -> Served:
    """The repository as the caller may read it (clone, fetch, and what a push starts from)."""
    async with unit_of_work(engine, write=False) as conn:
        ctx, space = await open_space(conn, state, base_url, authorization, org_id, space_id)
        if service == RECEIVE:
            content_service.require_content_edit(space)
        return await served(ctx, space)


class _Gone(Exception):
    """The client went away: the pack being written is of no use any more."""


# What the protocol's thread may write ahead of the client: at most this many chunks of
# about _CHUNK bytes, so a pack never sits whole in memory on its way out.
_CHUNK = 64 * 1024
_AHEAD = 8


async def upload(served_repo: Served, body: bytes) -> AsyncIterator[bytes]:
    """The answer to a fetch or clone, streamed as the thread building the pack writes it."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[bytes | None] = asyncio.Queue(_AHEAD)
    gone = threading.Event()
    pending = bytearray()

    def send(data: bytes | None) -> None:
        if gone.is_set():
            raise _Gone
        asyncio.run_coroutine_threadsafe(queue.put(data), loop).result()

    def write(data: bytes) -> None:
        pending.extend(data)
        if len(pending) >= _CHUNK:
            send(bytes(pending))
            pending.clear()

    def run() -> None:
        try:
            proto = ReceivableProtocol(io.BytesIO(body).read, write)
            UploadPackHandler(_backend(served_repo.repo), ["/"], proto, stateless_rpc=True).handle()
            if pending:
                send(bytes(pending))
        except _Gone:
            return
        finally:
            if not gone.is_set():
                send(None)

    worker = asyncio.ensure_future(asyncio.to_thread(run))
    try:
        while (chunk := await queue.get()) is not None:
            yield chunk
        await worker
    finally:
        gone.set()
        while not queue.empty():  # a thread waiting to put goes on, and stops at its next write
            queue.get_nowait()


async def receive(
    engine: AsyncEngine,
    state: Any,
    base_url: str,
    authorization: str | None,
    org_id: str,
    space_id: str,
    served_repo: Served,
    body: bytes,
) -> bytes:
    loop = asyncio.get_running_loop()
    repo = served_repo.repo

    async def apply(ref: bytes, old: bytes, new: bytes) -> str:
        async with unit_of_work(engine) as conn:
            ctx, space = await open_space(conn, state, base_url, authorization, org_id, space_id)
            return await apply_ref(ctx, space, served_repo, ref, old, new)

    repo.hooks["update"] = _UpdateHook(loop, apply)
    # What the push brings stays in the request's own store (a revision made from it is built
    # from the database, the objects it needs kept there).
    return await asyncio.to_thread(run_service, repo, RECEIVE, body)


async def apply_ref(
    ctx: Ctx, space: SpaceAccess, served_repo: Served, ref: bytes, old: bytes, new: bytes
) -> str:
    """A pushed (or pulled) ref moved from `old` to `new`, applied in the caller's transaction
    as a push to it is; GitRefusal, with the line git prints, when it is refused."""
    try:
        return await _apply_ref(ctx, space, served_repo, ref, old, new)
    except layout.LayoutError as exc:
        raise GitRefusal(str(exc)) from None
    except (BadRequest, Conflict, Forbidden, NotFound) as exc:
        raise GitRefusal(exc.message) from None


def _chain(repo: MemoryRepo, new: bytes, stop: set[bytes]) -> list[Commit]:
    """The commits from one in `stop` (excluded) to `new`, oldest first, by first parents;
    GitRefusal when `new` does not descend from one of them."""
    chain: list[Commit] = []
    sha = new
    while sha not in stop:
        obj = repo.object_store[ObjectID(sha)]
        if not isinstance(obj, Commit):
            raise GitRefusal("not a commit")
        chain.append(obj)
        if not obj.parents:
            raise GitRefusal("non-fast-forward: fetch first, and rebase your commits on it")
        sha = obj.parents[0]
        if len(chain) > 1000:
            raise GitRefusal("more than 1000 commits in one push")
    chain.reverse()
    return chain


async def _apply_ref(
    ctx: Ctx, space: SpaceAccess, served_repo: Served, ref: bytes, old: bytes, new: bytes
) -> str:
    content_service.require_content_edit(space)
    name = ref.decode("utf-8", "replace")
    if not name.startswith("refs/heads/"):
        raise GitRefusal("only branches are synced")
    branch = name.removeprefix("refs/heads/")
    if new == ZERO:
        raise GitRefusal("branches cannot be deleted over git: archive the change request")
    repo = served_repo.repo
    current = repo.refs.as_dict().get(Ref(ref))
    if (current or ZERO) != old:
        raise GitRefusal("fetch first: the branch has moved")
    chain = _chain(repo, new, {current} if current is not None else set(served_repo.revision_of))
    if not chain:
        return "nothing to apply"
    space_id = space.row["id"]
    cr = served_repo.branches.get(branch)
    # The revision the pushed tree is compared with: where the pushed commits start from, or
    # on a branch the newest of main's revisions they hold (a `git merge origin/main`, a
    # fast-forward to it), so that main's changes are not taken for the branch's own.
    start = served_repo.revision_of[chain[0].parents[0]]
    rebased = False
    reviewed = ref == MAIN and not await _straight_to_main(ctx, space)
    if reviewed:
        # Main did not move when an earlier push to it opened a change request, so the same
        # commits come again with the next push: they go on in that change request.
        found = _pushed_before(repo, served_repo, chain)
        if found is not None:
            cr, start, chain = found
            held = f"change request #{cr['number']} (branch {branch_of(cr)})"
            if not chain:
                where = cr_presenter.app_address(ctx.base_url, space_id, cr["number"])
                return f"main is under review: {held} holds these commits: {where}"
            if start != cr["revision_id"]:
                # It moved on since (an edit in the app): applying this push over it would
                # undo what it holds now.
                raise GitRefusal(
                    f"main is under review: {held} has changed since these commits; fetch its"
                    " branch and push your commits there"
                )
    if ref == MAIN and not reviewed:
        cr_id, base, number = None, served_repo.main, None
        said = "applied to main"
    elif cr is not None:
        cr_id, base, number = cr["id"], cr["revision_id"], cr["number"]
        said = f"updated change request #{cr['number']}"
        if reviewed:
            said = f"main is under review: {said} (branch {branch_of(cr)})"
        merged = _newest_main(repo, new, served_repo)
        rank = served_repo.main_rank
        if merged is not None and rank[merged] < rank.get(cr["standing_on"], len(rank)):
            base = start = await content_service.rebase_change_request(
                ctx, space_id, cr_id, base=base, onto=merged
            )
            rebased = True
    else:
        if ref != MAIN and branch.startswith(BRANCH_PREFIX):
            raise GitRefusal(f"{BRANCH_PREFIX}<n> names the branches of existing change requests")
        opened = await cr_service.create(
            ctx, space_id, CreateChangeRequest(subject=_subject(chain[0]))
        )
        if ref != MAIN:
            await repository.add_branch(ctx.conn, space_id, branch, opened["id"])
        cr_id, base, number = opened["id"], opened["revision"], opened["number"]
        said = f"opened change request #{opened['number']}"
        if ref == MAIN:
            said = f"main is under review: {said} (branch {BRANCH_PREFIX}{opened['number']})"
        start = _newest_main(repo, new, served_repo) or start
    made = await _apply_push(ctx, space_id, served_repo, chain, start, base, cr_id)
    if made is None and rebased:
        # The merge was the whole push: the branch is the commit pushed, as git has it.
        await _keep_pushed(ctx, space_id, served_repo, chain, base, exact=False)
    where = (
        space_presenter.app_address(ctx.base_url, space_id)
        if number is None
        else cr_presenter.app_address(ctx.base_url, space_id, number)
    )
    if made is None:
        return f"{said} (no change to the content): {where}"
    return f"{said}: {where}"


def _pushed_before(
    repo: MemoryRepo, served_repo: Served, chain: list[Commit]
) -> tuple[sa.RowMapping, str, list[Commit]] | None:
    """The open change request without a branch name of its own (one a push to main opened,
    or the app) whose revision the newest of the pushed commits became, with that revision
    and the commits after it; None when there is none. A revision a push made is the pushed
    commit itself, or a commit on top of it (its parent that is not a revision's own commit)."""
    made: dict[bytes, tuple[sa.RowMapping, str]] = {}
    for cr in served_repo.branches.values():
        if cr["name"] is not None:
            continue
        stack = [served_repo.commit_of[cr["revision_id"]]]
        while stack:
            sha = stack.pop()
            rid = served_repo.revision_of.get(sha)
            if rid is None or rid in served_repo.main_rank or sha in made:
                continue
            made[sha] = (cr, rid)
            for parent in repo.object_store[ObjectID(sha)].parents:  # type: ignore[attr-defined]
                if parent not in served_repo.revision_of:
                    made.setdefault(parent, (cr, rid))
                stack.append(parent)
    for at in range(len(chain) - 1, -1, -1):
        if chain[at].id in made:
            cr, rid = made[chain[at].id]
            return cr, rid, chain[at + 1 :]
    return None


def _newest_main(repo: MemoryRepo, tip: bytes, served_repo: Served) -> str | None:
    """The newest of main's revisions the pushed history reaches, through any parent, down to
    the commits the server already has; None when it reaches none."""
    rank = served_repo.main_rank
    newest: str | None = None
    seen: set[bytes] = set()
    stack = [tip]
    while stack:
        sha = stack.pop()
        if sha in seen:
            continue
        seen.add(sha)
        rid = served_repo.revision_of.get(sha)
        if rid is not None:
            if rid in rank and (newest is None or rank[rid] < rank[newest]):
                newest = rid
            continue
        if len(seen) > 10_000:
            raise GitRefusal("more than 10000 new commits in one push")
        obj = repo.object_store[ObjectID(sha)]
        if not isinstance(obj, Commit):
            raise GitRefusal("not a commit")
        stack.extend(obj.parents)
    return newest


def _subject(commit: Commit) -> str:
    first = commit.message.decode("utf-8", "replace").strip().split("\n", 1)[0]
    return first[:100] or "Changes pushed with git"


async def _straight_to_main(ctx: Ctx, space: SpaceAccess) -> bool:
    """Whether a push to main is an edit of main: a live space without merge rules."""
    if space.row["edit_mode"] != "live":
        return False
    return not await review_service.has_merge_rules(ctx, space.row["id"])


def _new_objects(repo: MemoryRepo, chain: list[Commit], known: set[bytes]) -> list[dict[str, Any]]:
    """The objects a push brought (its commits and what their trees hold that the space's own
    trees do not), to keep for a commit that builds on them."""
    out: dict[bytes, ShaFile] = {}
    store = repo.object_store
    for commit in chain:
        out[commit.id] = commit
        stack = [commit.tree]
        while stack:
            sha = stack.pop()
            if sha in out or sha in known:
                continue
            obj = store[sha]
            out[sha] = obj
            if obj.type_name == b"tree":
                stack += [entry.sha for entry in obj.items()]  # type: ignore[attr-defined]
    return [
        {"sha": sha.decode(), "type_num": obj.type_num, "data": obj.as_raw_string()}
        for sha, obj in out.items()
    ]


async def _apply_push(
    ctx: Ctx,
    space_id: str,
    served_repo: Served,
    chain: list[Commit],
    start: str,
    base: str,
    cr_id: str | None,
) -> str | None:
    """The pushed tip's files as one revision on `base`: compared with `start`, the revision
    the pushed commits start from (so what came to `base` meanwhile is not undone), applied in
    the caller's transaction. Nothing is applied when anything is refused."""
    repo = served_repo.repo
    row = await content_repository.get(ctx.conn, space_id, start)
    assert row is not None
    tip = chain[-1]
    ours = await _tree_of(ctx, row)
    # The start revision's blobs as made already (the store would hand out a copy of each).
    kept: dict[bytes, Blob] = {b.id: b for b in ours.files.values() if isinstance(b, Blob)}
    ids: dict[str, bytes] = {}
    try:
        files = git.files_of(
            lambda sha: kept.get(sha) or repo.object_store[ObjectID(sha)], tip.tree, ids
        )
    except (ValueError, KeyError) as exc:
        raise GitRefusal(str(exc)) from None
    same = _unchanged(ours, ids)
    before = await _compared(ctx, row, ours, files, ids, same)
    # The files pushed as the start revision has them are its pages as they are: not read again.
    by_id = {page.key: page for page in before.pages}
    known = {ours.paths[page_id]: by_id[page_id] for page_id in same if page_id in by_id}
    after = layout.adopt(before, await _assets_linked(layout.parse(files, known), before))
    ops = layout.changes(before, after)
    titles = {page.key: page.title for page in after.pages}
    for op in ops:
        if op["op"] == "update_page" and "markdown" in op:
            # A file states its page's title (its first line): a heading opening the body
            # under it is content, never a new title (see Editor._update_page).
            op.setdefault("title", titles[op["page"]])

    async def edit(editor: Editor) -> None:
        await _run(editor, ops)

    made = await content_service.write_edits(
        ctx, space_id, edit, base=base, change_request_id=cr_id
    )
    if made is None:
        return None
    made_row = await content_repository.get(ctx.conn, space_id, made)
    assert made_row is not None
    tree_id = (await _tree_of(ctx, made_row)).tree_id
    exact = (
        tree_id == tip.tree and len(chain) == 1 and tip.parents == [served_repo.commit_of.get(base)]
    )
    await _keep_pushed(ctx, space_id, served_repo, chain, made, exact=exact)
    return made


async def _keep_pushed(
    ctx: Ctx, space_id: str, served_repo: Served, chain: list[Commit], revision: str, *, exact: bool
) -> None:
    """The pushed tip as `revision`'s commit: the very commit when `exact` (its tree and parent
    are the revision's), else one on top of it that holds the files as the space stores them."""
    tip = chain[-1]
    await repository.keep_commit(
        ctx.conn,
        {
            "revision_id": revision,
            "space_id": space_id,
            "author": tip.author,
            "author_time": tip.author_time,
            "author_timezone": tip.author_timezone,
            "committer": tip.committer,
            "commit_time": tip.commit_time,
            "commit_timezone": tip.commit_timezone,
            "message": tip.message,
            "pushed": None if exact else tip.id.decode(),
        },
    )
    if not exact:
        await repository.keep_objects(
            ctx.conn, space_id, _new_objects(served_repo.repo, chain, served_repo.ours)
        )


async def _assets_linked(pushed: layout.Space, before: layout.Space) -> layout.Space:
    """The pushed pages with their links and images into .gitbook/assets/ (GitBook's
    `../.gitbook/assets/x.png`) as the stable references the engine stores: `/files/<id>` for
    a file the space has, the batch reference of one the push adds (the engine turns it into
    the same once the file has its id)."""
    kept = {a.name for a in pushed.assets}
    # A file the push deletes is linked to as written: nothing to resolve it to.
    have = {a.name: a.key for a in before.assets if a.key is not None and a.name in kept}
    added = kept - set(have)
    read = [p for p in pushed.pages if p.key in pushed.sources and "assets/" in p.markdown]
    if not read:
        return pushed
    await parsing.warm([p.markdown for p in read])
    linked: dict[str, layout.Page] = {}
    for page in read:
        source = pushed.sources[page.key]

        def resolve(target: str, _image: bool, source: str = source) -> str | None:
            name = layout.asset_target(source, target)
            if name in have:
                return f"/files/{have[name]}"
            if name in added:
                return f"./{layout.asset_ref(name)}"
            return None

        linked[page.key] = replace(page, markdown=md.rewrite_links(page.markdown, resolve))
    return replace(pushed, pages=tuple(linked.get(p.key, p) for p in pushed.pages))


def _unchanged(ours: _Built, ids: Mapping[str, bytes]) -> set[str]:
    """The pages whose file was pushed as the revision's tree has it (same path, same blob)."""
    out = set()
    for page_id, path in ours.paths.items():
        blob = ours.files.get(path)
        if isinstance(blob, Blob) and ids.get(path) == blob.id:
            out.add(page_id)
    return out


async def _compared(
    ctx: Ctx,
    row: Row,
    ours: _Built,
    files: Mapping[str, bytes],
    ids: Mapping[str, bytes],
    same: set[str],
) -> layout.Space:
    """The revision a push starts from, as what the push is compared with: the bodies of the
    pages whose file changed are read, and only those (the others are taken from the push as
    they are, so their bodies compare equal whatever they hold); a file pushed as the tree has
    it is the pushed bytes, others are read from the blob store. What the push costs follows
    what it changes, not the size of the space."""
    snap = content_repository.snapshot(ctx.conn, row)
    pages = _walk(ours.records)
    wanted = [
        ours.records[p.key]["markdown"]
        for p in pages
        if p.key not in same and ours.records[p.key].get("markdown")
    ]
    texts = await snap.markdowns(wanted) if wanted else {}
    full = tuple(
        p
        if p.key in same
        else replace(p, markdown=texts.get(ours.records[p.key].get("markdown") or "", ""))
        for p in pages
    )
    assets = []
    for rec, name in await _assets(snap):
        path = f"{layout.ASSETS}{name}"
        blob = ours.files.get(path)
        if isinstance(blob, Blob) and ids.get(path) == blob.id:
            data = files[path]
        else:
            data = await ctx.state.blobs.get(rec["blob"]) or b""
        assets.append(layout.Asset(rec["id"], name, data))
    return layout.Space(full, tuple(await _reusables(snap)), tuple(assets))


def _valid(model: Any, data: dict[str, Any], where: str) -> Any:
    try:
        return model.model_validate(data)
    except pydantic.ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(p) for p in first["loc"])
        raise GitRefusal(f"{where}: {loc}: {first['msg']}") from None


def _change(op: dict[str, Any], where: str) -> Any:
    """A layout operation as the change the content API takes."""
    kind = op["op"]
    if kind == "insert_page":
        fields = ("ref", "into", "at", "title", "slug", "emoji", "icon", "description", "hidden")
        return _valid(
            InsertPage,
            {
                "operation": "insert_page",
                **{k: op[k] for k in fields},
                "document": {"markdown": op["markdown"]},
            },
            where,
        )
    if kind == "update_page":
        given = {k: v for k, v in op.items() if k not in ("op", "markdown")}
        if "markdown" in op:
            given["document"] = {"markdown": op["markdown"]}
        return _valid(UpdatePage, {**given, "operation": "update_page"}, where)
    if kind == "delete_page":
        return _valid(DeletePage, {"operation": "delete_page", "page": op["page"]}, where)
    if kind == "insert_reusable":
        body = {"ref": op["ref"], "title": op["title"], "document": {"markdown": op["markdown"]}}
        return _valid(
            InsertReusableContent, {"operation": "insert_reusable_content", **body}, where
        )
    if kind == "update_reusable":
        body = {
            "reusableContent": op["reusable"],
            "title": op["title"],
            "document": {"markdown": op["markdown"]},
        }
        return _valid(
            UpdateReusableContent, {"operation": "update_reusable_content", **body}, where
        )
    if kind == "delete_reusable":
        body = {"reusableContent": op["reusable"]}
        return _valid(
            DeleteReusableContent, {"operation": "delete_reusable_content", **body}, where
        )
    file = FileInput.model_construct(
        name=op["name"],
        url=None,
        base64=base64.b64encode(op["data"]).decode(),
        contentType=None,
        ref=op.get("ref"),
    )
    return InsertFiles.model_construct(operation="insert_files", files=[file])


async def _run(editor: Editor, ops: list[dict[str, Any]]) -> None:
    """The layout's operations on the content engine's editor, in order, in as few batches as
    the API's changes can say (a group or link page is added between two)."""
    pending: list[Any] = []
    names: list[str] = []

    async def flush() -> None:
        try:
            await editor.apply(pending)
        except BadRequest as exc:
            message = exc.message
            for n, name in enumerate(names):
                message = message.replace(f"changes[{n}]", name)
            raise GitRefusal(message) from None
        pending.clear()
        names.clear()

    for op in ops:
        where = _where(op)
        if op["op"] in ("update_file", "delete_file"):
            # Files by id, on the editor itself (the API's changes only add files).
            await flush()
            try:
                if op["op"] == "update_file":
                    await editor.replace_file(op["file"], op["data"], where)
                else:
                    await editor.remove_file(op["file"], where)
            except BadRequest as exc:
                raise GitRefusal(exc.message) from None
            continue
        if op["op"] == "insert_page" and op["type"] != "document":
            await flush()
            await editor.import_page(
                ref=op["ref"],
                parent=op["into"],
                title=op["title"],
                markdown="",
                kind=op["type"],
                href=op["href"],
            )
            place = {"into": op["into"], "at": op["at"], "slug": op["slug"], "hidden": op["hidden"]}
            pending.append(
                _valid(UpdatePage, {"operation": "update_page", "page": op["ref"], **place}, where)
            )
        else:
            pending.append(_change(op, where))
        names.append(where)
    await flush()


def _where(op: dict[str, Any]) -> str:
    if "title" in op and op["op"] == "insert_page":
        return f"new page {op['title']!r}"
    if "page" in op:
        return f"page {op['page']}"
    if "name" in op:
        return f"{layout.ASSETS}{op['name']}"
    return str(op.get("title") or op["op"])
