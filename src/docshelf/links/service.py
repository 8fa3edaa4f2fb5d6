"""The links listings of a space's main content: every link, a page's links, a file's backlinks.

Links come from the index kept by content/indexing.py; whether each is broken is decided here,
against the head of main, so deleting or renaming a page shows in the very next read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal

import sqlalchemy as sa

from docshelf.authz.guard import not_found
from docshelf.content import downloads
from docshelf.content.presenter import present_file, present_page, present_revision
from docshelf.content.service import Target, Where, target
from docshelf.kit.context import Ctx
from docshelf.kit.pagination import PageParams, page_in_memory
from docshelf.links import repository
from docshelf.organization import policy as org_policy
from docshelf.organization.presenter import present_organization
from docshelf.space.presenter import present_space

Status = Literal["ok", "broken", "in-app"]


@dataclass(frozen=True)
class _Group:
    kind: str
    target: str
    anchor: str | None
    pages: tuple[str, ...]

    @property
    def key(self) -> str:
        return f"{self.kind}:{self.target}#{self.anchor or ''}"


class _Locations:
    """Builds GitBook ContentLocation objects for one space's main revision, loading the
    organization and space once per request."""

    def __init__(self, ctx: Ctx, t: Target, org: dict[str, Any], sign: Callable[..., str]):
        self.ctx = ctx
        self.t = t
        self.org = org
        self.space = present_space(t.space.row, t.space.role, ctx.base_url)
        sid = t.space.row["id"]
        # The revision's header: its pages and files are read through /revisions/{id}.
        self.context = {
            "type": "revision",
            "revision": present_revision(
                t.revision,
                pages=[],
                files=[],
                app_url=ctx.app_url(f"s/{sid}/revisions/{t.revision['id']}"),
                merged_from=None,
            ),
        }
        self.sign = sign

    async def page(self, page_id: str, anchor: str | None = None) -> dict[str, Any] | None:
        rec = await self.t.snap.page(page_id)
        if rec is None:
            return None
        sid = self.t.space.row["id"]
        out: dict[str, Any] = {
            "kind": "page",
            "organization": self.org,
            "space": self.space,
            "page": present_page(
                rec,
                path=await self.t.snap.path(page_id),
                pages=[],
                app_url=self.ctx.app_url(f"s/{sid}/pages/{page_id}"),
            ),
            "versionContext": self.context,
        }
        if anchor:
            out["internalLocation"] = {"type": "anchor", "anchor": anchor}
        return out

    async def file(self, file_id: str) -> dict[str, Any] | None:
        rec = await self.t.snap.file(file_id)
        if rec is None:
            return None
        return {
            "kind": "file",
            "organization": self.org,
            "space": self.space,
            "file": present_file(rec, self.sign(rec)),
            "versionContext": self.context,
        }


async def _context(ctx: Ctx, space_id: str) -> _Locations:
    t = await target(ctx, space_id, Where())
    org = present_organization(
        await org_policy.load(ctx, t.space.row["organization_id"]), ctx.base_url
    )
    sign = await downloads.signer(ctx.conn, ctx.base_url, space_id)
    return _Locations(ctx, t, org, sign)


def _groups(rows: Iterable[sa.RowMapping], page_of_anchor: bool) -> list[_Group]:
    found: dict[tuple[str, str, str | None], list[str]] = {}
    for row in rows:
        kind, target_, anchor = row["kind"], row["target"], row["anchor"]
        if kind == "anchor" and page_of_anchor:
            # "#section" points into the page that holds it.
            kind, target_, anchor = "page", row["page_id"], row["target"]
        pages = found.setdefault((kind, target_, anchor), [])
        if row["page_id"] not in pages:
            pages.append(row["page_id"])
    return [_Group(k, t, a, tuple(p)) for (k, t, a), p in found.items()]


async def _status(loc: _Locations, group: _Group) -> tuple[Status, dict[str, Any] | None]:
    if group.kind == "page":
        where = await loc.page(group.target, group.anchor)
        return ("ok" if where else "broken"), where
    if group.kind == "file":
        where = await loc.file(group.target)
        return ("ok" if where else "broken"), where
    url = {"kind": "url", "url": group.target}
    if group.kind == "unresolved":
        return "broken", url
    base = loc.ctx.base_url.rstrip("/") + "/"
    return ("in-app" if group.target.startswith(base) else "ok"), url


async def _listing(
    loc: _Locations, groups: list[_Group], params: PageParams, status: Status | None
) -> dict[str, Any]:
    judged = [(g, *await _status(loc, g)) for g in sorted(groups, key=lambda g: g.key)]
    broken = sum(1 for _, s, _ in judged if s == "broken")
    shown = [j for j in judged if status is None or j[1] == status]
    chunk, count, next_page = page_in_memory(
        shown, key=lambda j: j[0].key, params=params, listing="links"
    )
    items = []
    for group, state, where in chunk:
        locations = [await loc.page(p) for p in group.pages]
        item: dict[str, Any] = {
            "status": state,
            "relation": "reference",
            "locationReferences": [x for x in locations if x is not None],
        }
        if where is not None:
            item["targetReference"] = where
        items.append(item)
    body: dict[str, Any] = {
        "items": items,
        "count": count,
        "stats": {"total": len(judged), "broken": {"total": broken, "changeRequest": 0}},
    }
    if next_page is not None:
        body["next"] = {"page": next_page}
    return body


async def space_links(
    ctx: Ctx, space_id: str, params: PageParams, status: Status | None
) -> dict[str, Any]:
    loc = await _context(ctx, space_id)
    rows = await repository.of_space(ctx.conn, space_id)
    return await _listing(loc, _groups(rows, True), params, status)


async def page_links(
    ctx: Ctx, space_id: str, page_id: str, params: PageParams, status: Status | None
) -> dict[str, Any]:
    loc = await _context(ctx, space_id)
    if await loc.t.snap.page(page_id) is None:
        not_found("Page")
    rows = await repository.of_page(ctx.conn, space_id, page_id)
    return await _listing(loc, _groups(rows, True), params, status)


async def file_backlinks(
    ctx: Ctx, space_id: str, file_id: str, params: PageParams
) -> dict[str, Any]:
    loc = await _context(ctx, space_id)
    if await loc.t.snap.file(file_id) is None:
        not_found("File")
    pages = await repository.pages_linking_to(ctx.conn, space_id, "file", file_id)
    chunk, count, next_page = page_in_memory(pages, key=str, params=params, listing="backlinks")
    items = [x for x in [await loc.page(p) for p in chunk] if x is not None]
    body: dict[str, Any] = {"items": items, "count": count}
    if next_page is not None:
        body["next"] = {"page": next_page}
    return body
