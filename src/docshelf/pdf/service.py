"""`GET …/pdf`: a signed link to a PDF of a space's main content or a change request's.

Staged like a write that converts (docs/decisions/0006): a short
read checks access and collects the pages; with no transaction open the images are read from
the blob store and the PDF is rendered in the offload pool's `render` lane, bounded in time
(RENDER_SECONDS) and memory (DOCSHELF_OFFLOAD_MEMORY_MB); its bytes go to the blob store under
their SHA-256; one short write keeps the export. A repeated request for the same content (same
page and file maps, space title, `page`/`only`, renderer version) is served from what was kept
without rendering: one read.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import re
from typing import Any

import orjson

from docshelf import features
from docshelf.blobs import blob_key
from docshelf.change_request import repository as cr_repository
from docshelf.content import downloads
from docshelf.content.lifecycle import collect_unless_kept, schedule_collection
from docshelf.content.reusable import includes as reusable
from docshelf.content.service import Where, target
from docshelf.content.tree.snapshot import ROOT, Record, Snapshot
from docshelf.kit import offload
from docshelf.kit.clock import utcnow
from docshelf.kit.context import Ctx, Staged
from docshelf.kit.errors import BadRequest, ServiceUnavailable
from docshelf.pdf import render
from docshelf.pdf import repository as exports

# WeasyPrint needs ~100 ms of CPU a sheet (a 100-page space: ~12 s; benchmarks/RESULTS.md, "PDF
# export"). The limit is wall time, so it leaves room for a busy host; past it the worker is
# killed and the caller told to export less.
RENDER_SECONDS = 300.0
# Image bytes handed to one render; images past it show their alt text.
MAX_IMAGE_BYTES = 64 * 1024 * 1024
# Exports kept per space; older ones are collected (their links then answer 404).
KEEP_PER_SPACE = 20

log = logging.getLogger("docshelf.pdf")

# Renders under way in this process, by export key: a second identical request waits for the
# first instead of rendering the same PDF again.
_inflight: dict[str, asyncio.Task[bytes]] = {}


_FILE_REF = re.compile(r"/files/([A-Za-z0-9_-]+)")


def _order(records: dict[str, Record], root: Record) -> list[tuple[Record, int]]:
    """Pages in reading order (depth first, children in order) with their depth below `root`.
    Iterative: a tree may be 50 levels deep."""
    out: list[tuple[Record, int]] = []
    stack: list[tuple[str, int]] = [(cid, 0) for cid, _ in reversed(root["children"])]
    while stack:
        page_id, depth = stack.pop()
        rec = records.get(page_id)
        if rec is None:
            continue
        out.append((rec, depth))
        stack.extend((cid, depth + 1) for cid, _ in reversed(rec["children"]))
    return out


async def _pages(snap: Snapshot, page_id: str | None, only: bool) -> list[tuple[Record, int]]:
    if page_id is None:
        return _order(await snap.all_pages(), await snap.root())
    rec = await snap.page(page_id) if page_id != ROOT else None
    if rec is None:
        raise BadRequest(f"Invalid query 'page': no page '{page_id}' in this content")
    if only:
        return [(rec, 0)]
    subtree = {r["id"]: r for r in await snap.subtree(page_id)}
    return [(rec, 0), *((r, d + 1) for r, d in _order(subtree, rec))]


def _source_key(parts: dict[str, Any]) -> str:
    return hashlib.sha256(orjson.dumps(parts, option=orjson.OPT_SORT_KEYS)).hexdigest()


def _file_name(title: str) -> str:
    cleaned = "".join(c for c in title if c.isprintable() and c not in '/\\"').strip()
    return (cleaned[:100] or "export") + ".pdf"


async def export(
    st: Staged, space_id: str, where: Where, *, only: bool | None, page: str | None
) -> dict[str, Any]:
    if only and page is None:
        raise BadRequest("Invalid query 'only': it exports the page named by 'page', give one")
    async with st.read() as ctx:
        t = await target(ctx, space_id, where)
        subtitle = None
        if where.change_request is not None:
            cr = await cr_repository.get(ctx.conn, space_id, where.change_request)
            assert cr is not None  # `target` answered 404 otherwise
            subtitle = f"Change request #{cr['number']}" + (
                f": {cr['subject']}" if cr["subject"] else ""
            )
        title = str(t.space.row["title"] or "Untitled")
        key = _source_key(
            {
                "v": render.VERSION,
                "pages": t.snap.pages_root,
                "files": t.snap.files_root,
                "reusable": t.snap.reusable_root,
                "title": title,
                "subtitle": subtitle,
                "page": page,
                "only": bool(only),
            }
        )
        kept = await exports.get(ctx.conn, space_id, key)
        if kept is not None:
            return await _answer(ctx, space_id, kept, title)
        # A PDF already kept is served on any machine; a new one needs WeasyPrint's libraries.
        features.require(st.state.features, "pdf")
        ordered = await _pages(t.snap, page, bool(only))
        texts = await t.snap.markdowns([r["markdown"] for r, _ in ordered if r.get("markdown")])
        texts = {k: await reusable.expand(t.snap, v) for k, v in texts.items()}
        files = await t.snap.all_files()
    job = await _job(st, title, subtitle, ordered, texts, files)
    task = _inflight.get(f"{space_id}\0{key}")
    if task is None:
        task = asyncio.ensure_future(_render(job, t.space.org_id))
        _inflight[f"{space_id}\0{key}"] = task
        task.add_done_callback(lambda _: _inflight.pop(f"{space_id}\0{key}", None))
    data = await asyncio.shield(task)
    put = blob_key(data)
    await st.state.blobs.put(data)
    async with collect_unless_kept(st.engine, {put}), st.write() as ctx:
        await target(ctx, space_id, where)  # access may have changed while we rendered
        kept = await exports.record(
            ctx.conn,
            st.state.blobs,
            space_id=space_id,
            source_key=key,
            data=data,
            blob_key=put,
            now=utcnow(),
        )
        dropped = await exports.prune(ctx.conn, space_id, key, KEEP_PER_SPACE)
        if kept != put:
            dropped.append(put)
        await schedule_collection(ctx.conn, sorted(set(dropped)))
        return await _answer(ctx, space_id, kept, title)


async def _answer(ctx: Ctx, space_id: str, blob: str, title: str) -> dict[str, Any]:
    url = await downloads.export_url(
        ctx.conn, ctx.base_url, space_id, blob, _file_name(title), "application/pdf"
    )
    return {"url": url}


async def _job(
    st: Staged,
    title: str,
    subtitle: str | None,
    ordered: list[tuple[Record, int]],
    texts: dict[str, str],
    files: dict[str, Record],
) -> render.Job:
    """The render's plain inputs, images read from the blob store (no transaction open)."""
    pages = tuple(
        render.Page(
            id=rec["id"],
            title=rec.get("title") or "Untitled",
            depth=depth,
            kind=rec.get("type") or "document",
            markdown=texts.get(rec.get("markdown") or "", ""),
            description=rec.get("description"),
            href=rec.get("href") if isinstance(rec.get("href"), str) else None,
        )
        for rec, depth in ordered
    )
    # Which files the pages may show, by a linear scan rather than a parse (~2.5 us a character
    # on the event loop): it may also name linked files, whose bytes are then read for nothing
    # (the renderer shows only images), within MAX_IMAGE_BYTES.
    wanted = [m[1] for p in pages for m in _FILE_REF.finditer(p.markdown)]
    images: dict[str, tuple[bytes, str]] = {}
    budget = MAX_IMAGE_BYTES
    for file_id in dict.fromkeys(wanted):
        rec = files.get(file_id)
        if rec is None or not str(rec.get("contentType", "")).startswith("image/"):
            continue
        if int(rec.get("size") or 0) > budget:
            continue
        data = await st.state.blobs.get(rec["blob"])
        if data is None or len(data) > budget:
            continue
        budget -= len(data)
        images[file_id] = (data, str(rec["contentType"]))
    return render.Job(title=title, subtitle=subtitle, pages=pages, images=images)


async def _render(job: render.Job, org_id: str) -> bytes:
    try:
        # Turns between organizations for the export lane: one organization's exports queue
        # behind its own, not in front of everyone else's.
        return await offload.run(
            render.render_pdf, job, seconds=RENDER_SECONDS, lane="render", tenant=org_id
        )
    except offload.OffloadTimeout:
        raise BadRequest(
            f"The PDF took longer than {RENDER_SECONDS:g} s to render and was stopped; "
            "export part of the content with 'page' (and 'only')"
        ) from None
    except render.LibraryMissing as exc:
        # The machine's fault, not the content's: a library gone since the start-up check.
        log.error("PDF export: %s", exc)
        raise ServiceUnavailable(
            f"PDF export is unavailable on this server: {exc}. An administrator installs "
            f"what it lacks with `{features.install_command(features.PDF.needs)}`"
            " and restarts Docshelf"
        ) from None
    except (offload.OffloadCrashed, MemoryError):
        raise BadRequest(
            "The PDF needed more memory than a render may use; "
            "export part of the content with 'page' (and 'only')"
        ) from None
    except Exception:
        # Content WeasyPrint cannot lay out is the content's problem to report, not a 500.
        log.exception("PDF render failed")
        raise BadRequest("The content could not be rendered as PDF") from None
