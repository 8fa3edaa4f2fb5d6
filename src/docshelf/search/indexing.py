"""Keeps the search index in step with main: hears the content engine's signals."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncConnection

from docshelf.content.signals import ContentCopied, MainMoved
from docshelf.document import markdown as md
from docshelf.search import engine


async def main_moved(conn: AsyncConnection, event: MainMoved) -> None:
    indexed: dict[str, engine.IndexedPage | None] = {}
    for pid, page in event.pages.items():
        if page is None:
            indexed[pid] = None
            continue
        sections = tuple(
            engine.IndexedSection(s.anchor, s.title, s.body)
            for s in md.split_sections(page.markdown)
        )
        indexed[pid] = engine.IndexedPage(page.title, sections)
    if indexed:
        await engine.reindex(conn, event.space_id, indexed)


async def content_copied(conn: AsyncConnection, event: ContentCopied) -> None:
    await engine.copy_space(conn, event.source, event.target)


async def content_released(conn: AsyncConnection, space_id: str) -> None:
    # SQLite's FTS5 table has no foreign key to cascade.
    await engine.drop_space(conn, space_id)
