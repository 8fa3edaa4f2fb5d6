"""Keeps the links index in step with main: hears the content engine's signals."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncConnection

from docshelf.content.signals import ContentCopied, MainMoved
from docshelf.content.tree import hamt
from docshelf.links import repository


async def main_moved(conn: AsyncConnection, event: MainMoved) -> None:
    after = event.after
    rows: dict[str, list[repository.Row] | None] = {
        pid: None if page is None else repository.rows_for(pid, page.markdown)
        for pid, page in event.pages.items()
    }
    wanted: dict[str, set[str]] = {"page": set(), "file": set()}
    for found in rows.values():
        for row in found or ():
            if row.kind in wanted:
                wanted[row.kind].add(row.target)
    existing = {
        "page": set(await hamt.lookup(after.store, after.pages_root, wanted["page"])),
        "file": set(await hamt.lookup(after.store, after.files_root, wanted["file"])),
    }
    await repository.reindex(
        conn, event.space_id, rows, existing=existing, appeared=event.appeared, gone=event.gone
    )


async def content_copied(conn: AsyncConnection, event: ContentCopied) -> None:
    await repository.copy_space(conn, event.source, event.target)
