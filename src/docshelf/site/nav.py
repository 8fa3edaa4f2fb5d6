"""A revision's page tree as the reader shows it, built once per revision and kept (revisions
never change): reading order, paths, titles, and what each page needs to be filtered for one
visitor (hidden, condition). Pure data, no I/O past `load`."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import orjson
from sqlalchemy.ext.asyncio import AsyncConnection

from docshelf.content import repository as content_repository
from docshelf.kit.lru import SizedLRU, counted
from docshelf.site.conditions import shows

_KEEP = 256
_SCOPES_KEPT = 64
_navs: SizedLRU[tuple[str, str], Nav] = counted(_KEEP)


@dataclass(frozen=True, slots=True)
class NavPage:
    id: str
    title: str
    path: str  # slugs joined by "/"
    kind: str  # document, group or link
    hidden: bool
    condition: str | None
    depth: int
    parent: str | None
    description: str | None
    markdown: str | None  # the text's object key
    href: str | None
    updated_at: str | None


@dataclass(frozen=True, slots=True)
class Nav:
    revision_id: str
    created_at: datetime
    pages: dict[str, NavPage]
    order: tuple[str, ...]  # depth first, children in order
    children: dict[str | None, tuple[str, ...]]
    by_path: dict[str, str]  # a page's slug path -> its id (the published look-up's walk)
    files_root: str | None
    pages_root: str | None
    # (id, condition) of the pages with a condition of their own: few, usually none.
    conditional: tuple[tuple[str, str], ...] = ()
    # Canonical visitor scope -> the conditional pages that hold for it. Every anonymous
    # visitor has the same scope, so a revision's conditions are evaluated once for all of them,
    # not once per page per request (a site of 1,000 conditional pages cost seconds a search).
    _holding: dict[bytes, frozenset[str]] = field(default_factory=dict, compare=False)

    def _holds(self, scope: dict[str, Any]) -> frozenset[str]:
        try:
            key = orjson.dumps(scope, option=orjson.OPT_SORT_KEYS)
        except TypeError:
            key = b""
        found = self._holding.get(key) if key else None
        if found is None:
            found = frozenset(pid for pid, cond in self.conditional if shows(cond, scope))
            if key:
                if len(self._holding) >= _SCOPES_KEPT:
                    self._holding.clear()
                self._holding[key] = found
        return found

    def shown_conditions(self, scope: dict[str, Any] | None) -> tuple[str, ...]:
        """The conditional pages whose own condition holds for this visitor: with the tree,
        it decides every page's `shown` (a page shows when its ancestors' conditions hold)."""
        if scope is None:
            return tuple(pid for pid, _ in self.conditional)
        holding = self._holds(scope)
        return tuple(pid for pid, _ in self.conditional if pid in holding)

    def shown(self, page_id: str, scope: dict[str, Any] | None) -> bool:
        """The page and every page above it hold their conditions for this visitor."""
        if scope is None or not self.conditional:
            return True
        holding = self._holds(scope)
        page: NavPage | None = self.pages.get(page_id)
        while page is not None:
            if page.condition is not None and page.id not in holding:
                return False
            page = self.pages.get(page.parent) if page.parent else None
        return True

    def listed(self, scope: dict[str, Any] | None) -> list[NavPage]:
        """What the sidebar lists, in order: shown, not hidden, nothing under a hidden page."""
        out: list[NavPage] = []
        skip: set[str] = set()
        holding = self._holds(scope) if scope is not None and self.conditional else frozenset()
        for page_id in self.order:
            page = self.pages[page_id]
            # `order` lists parents first, so a parent that fails is already in `skip`: only
            # the page's own condition is left to test.
            if (
                page.parent in skip
                or page.hidden
                or (scope is not None and page.condition is not None and page_id not in holding)
            ):
                skip.add(page_id)
                continue
            out.append(page)
        return out


async def load(conn: AsyncConnection, space_id: str, revision_id: str) -> Nav | None:
    key = (space_id, revision_id)
    nav = _navs.get(key)
    if nav is not None:
        return nav
    row = await content_repository.get(conn, space_id, revision_id)
    if row is None:
        return None
    snap = content_repository.snapshot(conn, row)
    records = await snap.all_pages()
    root = await snap.root()
    pages: dict[str, NavPage] = {}
    order: list[str] = []
    children: dict[str | None, tuple[str, ...]] = {}
    # Iterative: a tree may be 50 levels deep.
    stack: list[tuple[str, str | None, str, int]] = [
        (cid, None, slug, 0) for cid, slug in reversed(root["children"])
    ]
    children[None] = tuple(cid for cid, _ in root["children"] if cid in records)
    while stack:
        page_id, parent, path, depth = stack.pop()
        rec = records.get(page_id)
        if rec is None:
            continue
        href = rec.get("href")
        pages[page_id] = NavPage(
            id=page_id,
            title=str(rec.get("title") or "Untitled"),
            path=path,
            kind=str(rec.get("type") or "document"),
            hidden=bool(rec.get("hidden")),
            condition=rec.get("condition"),
            depth=depth,
            parent=parent,
            description=rec.get("description"),
            markdown=rec.get("markdown"),
            href=href if isinstance(href, str) else None,
            updated_at=rec.get("updatedAt"),
        )
        order.append(page_id)
        kids = rec.get("children") or []
        children[page_id] = tuple(cid for cid, _ in kids if cid in records)
        stack.extend((cid, page_id, f"{path}/{slug}", depth + 1) for cid, slug in reversed(kids))
    nav = Nav(
        revision_id=revision_id,
        created_at=row["created_at"],
        pages=pages,
        order=tuple(order),
        children=children,
        by_path={page.path: page.id for page in pages.values()},
        files_root=row["files_root"],
        pages_root=row["pages_root"],
        conditional=tuple((p.id, p.condition) for p in pages.values() if p.condition),
    )
    _navs.put(key, nav)
    return nav
