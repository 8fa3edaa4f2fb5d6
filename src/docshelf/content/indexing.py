"""Announces how main moved, for what is derived from it (links, the search index, which hear
`signals.main_moved`), and keeps the listing pieces in step.

Called in the transaction that moves a space's head, with the snapshots before and after: only
pages whose record changed are looked at (a map diff skips everything shared), and only those
whose title or body changed are re-read.
"""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncConnection

from docshelf.content import signals
from docshelf.content.listing import stored as stored_listing
from docshelf.content.tree import hamt
from docshelf.content.tree.snapshot import ROOT, Snapshot
from docshelf.document import parsing


async def main_moved(
    conn: AsyncConnection, space_id: str, before: Snapshot | None, after: Snapshot
) -> None:
    old_root = None if before is None else before.pages_root
    page_diff = await hamt.diff(after.store, old_root, after.pages_root)
    if page_diff:
        await stored_listing.listing_moved(conn, space_id, before, after)
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
    pages: dict[str, signals.PageText | None] = {}
    for pid in relevant:
        rec = new.get(pid)
        pages[pid] = (
            None
            if rec is None
            else signals.PageText(
                rec["title"], rec["type"], texts.get(rec.get("markdown") or "", "")
            )
        )
    await signals.main_moved.send(
        conn, signals.MainMoved(space_id, after, pages, appeared=appeared, gone=gone)
    )
