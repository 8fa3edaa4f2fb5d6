"""Keeps what is derived from main content (links, the search index) in step with main.

Called in the transaction that moves a space's head, with the snapshots before and after: only
pages whose record changed are looked at (a map diff skips everything shared), and only those
whose title or body changed are re-read.
"""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncConnection

import docshelf.document.markdown as md
from docshelf.content import hamt, lifecycle
from docshelf.content.snapshot import ROOT, Snapshot
from docshelf.document import parsing
from docshelf.links import repository as links
from docshelf.search import engine as search


async def main_moved(
    conn: AsyncConnection, space_id: str, before: Snapshot | None, after: Snapshot
) -> None:
    old_root = None if before is None else before.pages_root
    page_diff = await hamt.diff(after.store, old_root, after.pages_root)
    if page_diff:
        await lifecycle.listing_moved(conn, space_id, before, after)
    page_diff.pop(ROOT, None)
    old_files = None if before is None else before.files_root
    file_diff = await hamt.diff(after.store, old_files, after.files_root)
    # Pages and files that appeared in or left main: links to them change status.
    appeared = {
        "page": [k for k, (a, _) in page_diff.items() if a is None],
        "file": [k for k, (a, _) in file_diff.items() if a is None],
    }
    gone = {
        "page": [k for k, (_, b) in page_diff.items() if b is None],
        "file": [k for k, (_, b) in file_diff.items() if b is None],
    }
    changed = list(page_diff)
    if not changed and not file_diff:
        return
    old = await before.pages(changed) if before is not None else {}
    new = await after.pages(changed)
    relevant = [
        pid
        for pid in changed
        if pid not in new
        or pid not in old
        or (old[pid].get("markdown"), old[pid]["title"], old[pid]["type"])
        != (new[pid].get("markdown"), new[pid]["title"], new[pid]["type"])
    ]
    texts = await after.markdowns(
        {new[p]["markdown"] for p in relevant if new.get(p, {}).get("markdown")}
    )
    await parsing.warm(texts.values())
    link_rows: dict[str, list[links.Row] | None] = {}
    indexed: dict[str, search.IndexedPage | None] = {}
    for pid in relevant:
        rec = new.get(pid)
        if rec is None:
            link_rows[pid] = None
            indexed[pid] = None
            continue
        text = texts.get(rec.get("markdown") or "", "")
        link_rows[pid] = links.rows_for(pid, text)
        sections = tuple(
            search.IndexedSection(s.anchor, s.title, s.body) for s in md.split_sections(text)
        )
        indexed[pid] = search.IndexedPage(rec["title"], sections)
    wanted: dict[str, set[str]] = {"page": set(), "file": set()}
    for rows in link_rows.values():
        for row in rows or ():
            if row.kind in wanted:
                wanted[row.kind].add(row.target)
    existing = {
        "page": set(await hamt.lookup(after.store, after.pages_root, wanted["page"])),
        "file": set(await hamt.lookup(after.store, after.files_root, wanted["file"])),
    }
    await links.reindex(conn, space_id, link_rows, existing=existing, appeared=appeared, gone=gone)
    if indexed:
        await search.reindex(conn, space_id, indexed)
