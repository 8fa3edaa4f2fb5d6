"""Importing content into a space's main line: fetch through the guarded fetcher, convert, apply.

Everything that can fail for a reason the caller can fix (a refused URL, an error answer, an
unsupported source, an archive that is not one) fails before anything is written, as a 400.
Imports larger than LARGE_IMPORT resources are applied by a durable job: the answer is then an
import run (GitBook's ContentImportRun), pending, naming the revision the job will create, and
the run shows the job's progress and outcome.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from docshelf.authz.guard import not_found
from docshelf.blobs import BlobStore
from docshelf.content import indexing, repository
from docshelf.content.edits import Editor
from docshelf.content.lifecycle import collect_unless_kept, schedule_collection
from docshelf.content.service import require_content_edit
from docshelf.content.tree.snapshot import Snapshot
from docshelf.document import parsing
from docshelf.events import event, outbox
from docshelf.events.event import user_ref
from docshelf.fetch import Fetcher
from docshelf.imports import repository as runs
from docshelf.imports.convert import (
    ConversionError,
    Imported,
    from_docx,
    from_html,
    from_markdown,
    from_zip,
)
from docshelf.imports.presenter import present_run
from docshelf.kit import offload
from docshelf.kit.clock import isoformat, utcnow
from docshelf.kit.context import Ctx, Staged
from docshelf.kit.db import unit_of_work
from docshelf.kit.errors import BadRequest, NotFound
from docshelf.kit.ids import new_id
from docshelf.kit.pagination import PageParams, SortKey, paginate
from docshelf.models import import_runs
from docshelf.organization import policy as org_policy
from docshelf.space import policy as space_policy
from docshelf.space import repository as space_repository
from docshelf.worker.queue import enqueue
from docshelf.worker.registry import JobEnv, task

SUPPORTED = ("markdown", "zip", "html", "docx")
LARGE_IMPORT = 200
MAX_IMPORT_BYTES = 100 * 1024 * 1024
IMPORT_JOB = "content.import"
# The offload lane of everything an import converts and parses (kit/offload.py).
LANE: offload.Lane = "convert"


def convert(source: str, data: bytes, name: str) -> Imported:
    try:
        if source == "markdown":
            return from_markdown(data, name)
        if source == "html":
            return from_html(data, name)
        if source == "docx":
            return from_docx(data, name)
        return from_zip(data)
    except ConversionError as exc:
        raise BadRequest(f"Cannot import this {source} content: {exc}") from None


async def _edit(
    snap: Snapshot,
    imported: Imported,
    now: str,
    progress: Callable[[int], None] | None = None,
) -> Editor:
    """The imported pages and files added after the top-level pages of `snap`'s tree."""

    async def no_fetch(url: str) -> tuple[bytes, str | None]:
        raise BadRequest("imports do not fetch further URLs")

    async def no_revisions(_: str) -> Snapshot | None:
        return None

    editor = Editor(
        snap,
        now=now,
        fetch_file=no_fetch,
        load_snapshot=no_revisions,
        default_revert_to=None,
        strict_includes=False,
    )
    for f in imported.files:
        await editor.import_file(ref=f.ref, name=f.name, content_type=f.content_type, data=f.data)
    for rc in imported.reusables:
        await editor.import_reusable(ref=rc.ref, title=rc.title, markdown=rc.markdown)
    for page in imported.pages:
        await editor.import_page(
            ref=page.ref,
            parent=page.parent,
            title=page.title,
            markdown=page.markdown,
            kind=page.kind,
            description=page.description,
            href=page.href,
        )
        if progress is not None:
            progress(1)
    await editor.finish()
    return editor


async def rehearse(
    engine: AsyncEngine, space_id: str, imported: Imported, tenant: str | None = None
) -> None:
    """Applies the import to main's head without writing anything and parses every body it would
    store (links rewritten to references) in a worker, so the write that follows parses nothing
    while it holds the space. Should main move meanwhile, the write still works; it may only
    have to parse."""
    async with unit_of_work(engine, write=False) as conn:
        space = await space_repository.get(conn, space_id)
        head = None if space is None else await repository.get(conn, space_id, space["revision_id"])
        if head is None:
            return
        try:
            editor = await _edit(repository.snapshot(conn, head), imported, "")
        except BadRequest:
            return  # the write reports it
        texts = await editor.final_texts()
    await parsing.warm(texts, every=True, lane=LANE, tenant=tenant)


async def apply(
    conn: AsyncConnection,
    space_id: str,
    imported: Imported,
    *,
    store: BlobStore,
    author_id: str | None,
    author_label: str | None = None,
    revision_id: str | None = None,
    progress: Callable[[int], None] | None = None,
    put: Collection[str] = (),
) -> str:
    """Adds the imported pages after main's top-level pages, as one new revision of main."""
    head_id = await space_repository.lock_head(conn, space_id)
    head = await repository.get(conn, space_id, head_id)
    assert head is not None
    snap = repository.snapshot(conn, head)
    now = utcnow()
    editor = await _edit(snap, imported, isoformat(now) or "", progress)
    outcome = editor.outcome
    await snap.commit()
    await repository.store_blobs(conn, store, space_id, outcome.blobs, put=put)
    new_id_ = await repository.insert(
        conn,
        space_id=space_id,
        revision_id=revision_id,
        type="edits",
        parents=[head_id],
        pages_root=snap.pages_root,
        files_root=snap.files_root,
        reusable_root=snap.reusable_root,
        author_id=author_id,
        created_at=now,
    )
    await repository.set_head(conn, space_id, new_id_, now)
    await indexing.main_moved(conn, space_id, repository.snapshot(conn, head), snap)
    await outbox.record(
        conn,
        event.SPACE_CONTENT_UPDATED,
        space=space_id,
        actor_id=author_id,
        actor_label=author_label,
        data={"revisionId": new_id_, "updatedBy": [user_ref(author_id, author_label)]},
    )
    return new_id_


CONVERT_TIMEOUT = 120.0


async def convert_offloaded(
    source: str, data: bytes, name: str, tenant: str | None = None
) -> Imported:
    """Converts in a worker process (kit.offload), by turns between `tenant`s: a large or
    hostile archive costs the API's event loop nothing, and conversion past CONVERT_TIMEOUT is
    stopped."""
    try:
        return await offload.run(
            convert, source, data, name, seconds=CONVERT_TIMEOUT, lane=LANE, tenant=tenant
        )
    except offload.OffloadTimeout:
        raise BadRequest(
            f"Cannot import this {source} content: converting it took longer than "
            f"{CONVERT_TIMEOUT:g} s"
        ) from None
    except (offload.OffloadCrashed, MemoryError):
        raise BadRequest(
            f"Cannot import this {source} content: converting it needed more memory than allowed"
        ) from None


def _check_source(source: str) -> None:
    if source not in SUPPORTED:
        raise BadRequest(
            f"Invalid body field 'source': importing from {source!r} is not supported; "
            f"use one of {', '.join(SUPPORTED)}"
        )


async def _check(ctx: Ctx, space_id: str) -> space_policy.SpaceAccess:
    access = await space_policy.load(ctx, space_id)
    require_content_edit(access)
    return access


@dataclass(frozen=True)
class Outcome:
    """An import applied now (`applied`: the 201 answer), or queued as a run (`run`: the 202
    answer, its status pending)."""

    applied: dict[str, Any] | None = None
    run: dict[str, Any] | None = None


async def import_content(st: Staged, space_id: str, url: str, source: str) -> Outcome:
    # Access first, so a refused caller makes us fetch nothing; then the fetch and the
    # conversion with no transaction open; then one short write, where access is checked again.
    async with st.read() as ctx:
        org_id = (await _check(ctx, space_id)).org_id
    _check_source(source)
    fetcher = Fetcher.from_settings(st.state.settings, max_bytes=MAX_IMPORT_BYTES)
    fetched = await fetcher.fetch(url)
    if not 200 <= fetched.status < 300:
        raise BadRequest(f"Cannot import {url}: it answered HTTP {fetched.status}")
    name = fetched.url.rstrip("/").rsplit("/", 1)[-1] or "index"
    if source == "html":
        # A web page's relative links and images lead back to its site: read against its URL
        # (without its query, which may hold a token and would be shown in the report).
        where = urlsplit(fetched.url)
        name = urlunsplit((where.scheme, where.netloc, where.path, "", ""))
    imported = await convert_offloaded(source, fetched.body, name, org_id)
    count = len(imported.pages) + len(imported.files)
    if count == 0:
        raise BadRequest(f"Nothing to import: {imported.total} resources, none usable")
    large = count > LARGE_IMPORT
    if not large:
        # Parsed in this process's memo, so the write parses nothing while it holds the space;
        # in the import's own lane, so a page write's parse never waits behind an import.
        pages = (p.markdown for p in imported.pages)
        await parsing.warm(pages, every=True, lane=LANE, tenant=org_id)
        await rehearse(st.engine, space_id, imported, org_id)
    # The bytes go to the blob store before the write opens: the archive for a job, or the
    # imported files for an import applied now.
    put = await repository.put_blobs(
        st.state.blobs, [fetched.body] if large else [f.data for f in imported.files]
    )
    async with collect_unless_kept(st.engine, put), st.write() as ctx:
        access = await _check(ctx, space_id)
        if not large:
            revision_id = await apply(
                ctx.conn,
                space_id,
                imported,
                store=st.state.blobs,
                author_id=st.actor.user_id,
                author_label=st.actor.display_name,
                put=put,
            )
            return Outcome(applied={"revision": revision_id, **report(imported)})
        revision_id = new_id()
        run_id = new_id()
        now = utcnow()
        key = await repository.stage_blob(
            ctx.conn, st.state.blobs, space_id, revision_id, fetched.body, put=put
        )
        await runs.insert_run(
            ctx.conn,
            id=run_id,
            organization_id=access.org_id,
            space_id=space_id,
            status="pending",
            source=source,
            source_url=url,
            revision_id=revision_id,
            total_resources=imported.total,
            detected=imported.detected,
            created_by=st.actor.user_id,
            created_at=now,
            updated_at=now,
        )
        await enqueue(
            ctx.conn,
            IMPORT_JOB,
            {
                "space": space_id,
                "blob": key,
                "source": source,
                "name": name,
                "revision": revision_id,
                "author": st.actor.user_id,
                # How events name the author, as when a request applies an import.
                "author_label": st.actor.display_name,
                "run": run_id,
            },
            organization=access.org_id,
        )
        row = await runs.get_run(ctx.conn, access.org_id, run_id)
        assert row is not None
        return Outcome(run=present_run(row, ctx.base_url))


_RUN_KEYS = (
    SortKey(import_runs.c.created_at, "created_at"),
    SortKey(import_runs.c.id, "id"),
)


async def list_runs(
    ctx: Ctx, org_id: str, params: PageParams, *, space: str | None, status: str | None
) -> dict[str, Any]:
    """The organization's runs into spaces the caller can read (a run shows what its space
    holds), most recent first; a non-member gets the organization's 404."""
    scope = await org_policy.content_scope(ctx, await org_policy.load(ctx, org_id))
    stmt = runs.runs_in_organization(org_id, space, status).where(scope.visible_spaces_clause())
    page = await paginate(ctx.conn, stmt, keys=_RUN_KEYS, params=params, descending=True)
    return page.render(lambda row: present_run(row, ctx.base_url))


async def get_run(ctx: Ctx, org_id: str, run_id: str) -> dict[str, Any]:
    await org_policy.load(ctx, org_id)
    row = await runs.get_run(ctx.conn, org_id, run_id)
    if row is None:
        not_found("Import run")
    try:
        await space_policy.load(ctx, row["space_id"])
    except NotFound:
        not_found("Import run")  # a run into a space the caller cannot read is not theirs
    return present_run(row, ctx.base_url)


def report(imported: Imported) -> dict[str, Any]:
    """What the answer and the CLI say about an import beside the revision."""
    counts = {"skipped": 0, "unresolved": 0, "approximated": 0}
    for s in imported.skipped:
        counts[s.kind] += 1
    return {
        "importedResources": imported.imported,
        "totalResources": imported.total,
        "detected": imported.detected,
        "skipped": [{"path": s.path, "reason": s.reason, "kind": s.kind} for s in imported.skipped],
        "skippedCounts": counts,
    }


async def _unstage(conn: AsyncConnection, payload: dict[str, Any]) -> None:
    """The archive is no use once the job is over, whichever way it ended."""
    key = await repository.unstage_blob(conn, payload["revision"])
    if key is not None:
        await schedule_collection(conn, [key])


async def _give_up(conn: AsyncConnection, payload: dict[str, Any], *, env: JobEnv) -> None:
    await _unstage(conn, payload)
    if payload.get("run"):
        await runs.fail_run(
            conn,
            payload["run"],
            "The import could not be applied: it failed on every attempt",
            utcnow(),
        )


@dataclass(frozen=True)
class _Refused:
    """The source cannot be imported, and trying again would not change that."""

    reason: str


async def _prepare_import(
    engine: AsyncEngine, payload: dict[str, Any], *, env: JobEnv
) -> Imported | _Refused:
    if payload.get("run"):
        async with unit_of_work(engine) as conn:
            await runs.start_run(conn, payload["run"], utcnow())
    data = await env.blobs.get(payload["blob"])
    if data is None:
        return _Refused("The archive to import is no longer stored")
    try:
        imported = await convert_offloaded(payload["source"], data, payload["name"])
    except BadRequest as exc:
        return _Refused(exc.message)
    await parsing.warm((p.markdown for p in imported.pages), every=True, lane=LANE)
    await rehearse(engine, payload["space"], imported)
    return imported


@task(IMPORT_JOB, prepare=_prepare_import, on_give_up=_give_up)
async def run_import(
    conn: AsyncConnection, payload: dict[str, Any], imported: Any, *, env: JobEnv
) -> None:
    if await space_repository.get(conn, payload["space"]) is None:
        return  # purged meanwhile, and its stage and run with it
    if await repository.get(conn, payload["space"], payload["revision"]):
        # A retry after a commit that already applied it (and completed its run).
        await _unstage(conn, payload)
        return
    if isinstance(imported, _Refused):
        if payload.get("run"):
            await runs.fail_run(conn, payload["run"], imported.reason, utcnow())
        await _unstage(conn, payload)
        return
    await apply(
        conn,
        payload["space"],
        imported,
        store=env.blobs,
        author_id=payload["author"],
        author_label=payload.get("author_label"),
        revision_id=payload["revision"],
    )
    if payload.get("run"):
        done = report(imported)
        summary = {k: done[k] for k in ("importedResources", "skipped", "skippedCounts")}
        await runs.complete_run(conn, payload["run"], summary, utcnow())
    await _unstage(conn, payload)
