"""The links listings of a space's main content: every link, a page's links, a file's backlinks.

Links come from the index kept by content/indexing.py, grouped by target, with whether the
target exists in main's head kept current as main moves: a page of the listing is one index
range, filters included, and each listed target is confirmed against the head when presented.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import orjson
from sqlalchemy.ext.asyncio import AsyncConnection

from docshelf.authz.guard import not_found
from docshelf.content import downloads
from docshelf.content.presenter import present_file, present_page, present_revision
from docshelf.content.service import Target, Where, merged_from_of, target
from docshelf.kit.context import Ctx
from docshelf.kit.db import reads_committed
from docshelf.kit.errors import BadRequest
from docshelf.kit.lru import SizedLRU
from docshelf.kit.pagination import PageParams, decode_cursor, encode_cursor, page_in_memory
from docshelf.links import repository
from docshelf.organization import policy as org_policy
from docshelf.organization.presenter import present_organization
from docshelf.space.presenter import present_space

Status = Literal["ok", "broken", "in-app"]

# What a kept entry costs beyond its text (its key's strings, the tuples, the LRU's own node):
# an estimate, so that a budget in bytes means about what it says.
_ENTRY_BYTES = 400
# How a revision's page is presented in a location, encoded, by (space, revision, page, base
# URL): a revision never changes, and a listing page names ~100 of them. The organization and
# the space around it carry the caller's permissions and are presented per request.
_PAGES: SizedLRU[tuple[str, str, str, str], bytes] = SizedLRU(
    8 * 1024 * 1024, lambda page: len(page) + _ENTRY_BYTES
)


class _Locations:
    """Builds GitBook ContentLocation objects for one space's main revision, loading the
    organization and space once per request."""

    def __init__(
        self,
        ctx: Ctx,
        t: Target,
        org: dict[str, Any],
        sign: Callable[..., str],
        merged_from: dict[str, Any] | None,
    ):
        self.ctx = ctx
        self.t = t
        # Encoded once: every location of the answer holds the same three.
        self.org = orjson.Fragment(orjson.dumps(org))
        self.space = orjson.Fragment(
            orjson.dumps(present_space(t.space.row, t.space.role, ctx.base_url))
        )
        sid = t.space.row["id"]
        # The revision's header: its pages and files are read through /revisions/{id}.
        self.context = orjson.Fragment(
            orjson.dumps(
                {
                    "type": "revision",
                    "revision": present_revision(
                        t.revision,
                        pages=[],
                        files=[],
                        app_url=ctx.app_url(f"s/{sid}/revisions/{t.revision['id']}"),
                        # GitBook requires it on merge revisions (0.202).
                        merged_from=merged_from,
                    ),
                }
            )
        )
        self.sign = sign
        self.base = ctx.base_url.rstrip("/") + "/"
        self._pages: dict[str, dict[str, Any] | None] = {}
        # Pages found presented already by prefetch: not looked up in _PAGES a second time.
        self._encoded: dict[str, bytes] = {}

    async def prefetch(self, page_ids: set[str], file_ids: set[str]) -> None:
        """Reads the pages (and their ancestors, for paths) and files a listing page presents,
        one batch per tree level, instead of one look-up each."""
        snap = self.t.snap
        await snap.files(file_ids)
        # A page presented before is in the revision, path and all: nothing to read for it.
        wanted = set()
        for p in page_ids:
            page = _PAGES.get(self._kept(p))
            if page is None:
                wanted.add(p)
            else:
                self._encoded[p] = page
        while wanted:
            found = await snap.pages(wanted)
            wanted = {r["parent"] for r in found.values() if r.get("parent")} - set(found)

    async def page(self, page_id: str, anchor: str | None = None) -> dict[str, Any] | None:
        # A listing page names the same pages many times (as targets and as holders): each is
        # presented once, and the answer holds it by reference.
        if page_id not in self._pages:
            self._pages[page_id] = await self._page(page_id)
        where = self._pages[page_id]
        if where is None or not anchor:
            return where
        return {**where, "internalLocation": {"type": "anchor", "anchor": anchor}}

    def _kept(self, page_id: str) -> tuple[str, str, str, str]:
        return (self.t.space.row["id"], self.t.revision["id"], page_id, self.ctx.base_url)

    async def _page(self, page_id: str) -> dict[str, Any] | None:
        key = self._kept(page_id)
        page = self._encoded.get(page_id) or _PAGES.get(key)
        if page is None:
            rec = await self.t.snap.page(page_id)
            if rec is None:
                return None
            sid = self.t.space.row["id"]
            page = orjson.dumps(
                present_page(
                    rec,
                    path=await self.t.snap.path(page_id),
                    pages=[],
                    app_url=self.ctx.app_url(f"s/{sid}/pages/{page_id}"),
                )
            )
            _PAGES.put(key, page)
        return {
            "kind": "page",
            "organization": self.org,
            "space": self.space,
            "page": orjson.Fragment(page),
            "versionContext": self.context,
        }

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
    merged_from = await merged_from_of(ctx, space_id, t.revision)
    return _Locations(ctx, t, org, sign, merged_from)


_LISTING = "links:v2"


def _after(params: PageParams) -> tuple[tuple[str, str], int] | None:
    """The last group served and the count taken on the first page."""
    if params.page is None:
        return None
    sort_key, group_hash, count = decode_cursor(params.page, _LISTING, 3)
    if not (
        isinstance(sort_key, str)
        and isinstance(group_hash, str)
        and isinstance(count, int)
        and not isinstance(count, bool)
        and count >= 0
    ):
        raise BadRequest("Invalid query parameter 'page': not a cursor returned by this listing")
    return (sort_key, group_hash), count


def _stored_status(group: repository.Group, base: str) -> str:
    if group.row.kind == "url" and group.row.target.startswith(base):
        return "in-app"
    return group.status


async def _judge(loc: _Locations, group: repository.Group) -> tuple[Status, dict[str, Any] | None]:
    """The status of one listed group, confirmed against the head (the stored status decides
    filters and counts; the location is read here anyway)."""
    row = group.row
    if row.kind == "page":
        where = await loc.page(row.target, row.anchor)
        return ("ok" if where else "broken"), where
    if row.kind == "file":
        where = await loc.file(row.target)
        return ("ok" if where else "broken"), where
    url = {"kind": "url", "url": row.target}
    if row.kind == "unresolved":
        return "broken", url
    return ("in-app" if row.target.startswith(loc.base) else "ok"), url


@dataclass(frozen=True, slots=True)
class _Read:
    """One page of a listing as read from the index (nothing changes its lists once read)."""

    total: int
    broken: int
    count: int
    chunk: list[repository.Group]
    more: bool
    holders: dict[str, list[str]]

    def bytes(self) -> int:
        """About what it holds: a listing page of a thousand long links, or one link held by
        ten thousand pages, is megabytes."""
        text = sum(
            len(g.sort_key) + len(g.group_hash) + len(g.row.target) + len(g.row.anchor or "")
            for g in self.chunk
        )
        held = sum(len(pages) for pages in self.holders.values())
        return _ENTRY_BYTES + 300 * len(self.chunk) + text + 80 * held


# By (space, revision, base URL, status, cursor, limit, page).
_READS: SizedLRU[tuple[Any, ...], _Read] = SizedLRU(16 * 1024 * 1024, _Read.bytes)


async def _read(
    conn: AsyncConnection,
    space_id: str,
    page_id: str | None,
    status: Status | None,
    base: str,
    cursor: tuple[tuple[str, str], int] | None,
    limit: int,
) -> _Read:
    after = None if cursor is None else cursor[0]
    if page_id is None:
        total, broken = await repository.stats(conn, space_id)
        if cursor is not None:
            count = cursor[1]  # as counted on the first page, like every keyset listing
        elif status is None:
            count = total
        elif status == "broken":
            count = broken
        else:
            in_app = await repository.count_groups(conn, space_id, status="in-app", base=base)
            count = in_app if status == "in-app" else total - broken - in_app
        chunk = (
            await repository.groups(
                conn, space_id, status=status, base=base, after=after, limit=limit + 1
            )
            if limit
            else []
        )
    else:
        # A page's own links are few: read them all (by primary key), count and page here.
        groups = await repository.groups_of_page(conn, space_id, page_id)
        total = len(groups)
        broken = sum(1 for g in groups if g.status == "broken")
        shown = [g for g in groups if status is None or _stored_status(g, base) == status]
        count = len(shown)
        chunk = [g for g in shown if after is None or (g.sort_key, g.group_hash) > after][
            : limit + 1 if limit else 0
        ]
    more = len(chunk) > limit
    chunk = chunk[:limit]
    if page_id is None:
        holders = await repository.pages_of_groups(conn, space_id, [g.group_hash for g in chunk])
    else:
        holders = {g.group_hash: [page_id] for g in chunk}
    return _Read(total, broken, count, chunk, more, holders)


async def _listing(
    loc: _Locations, params: PageParams, status: Status | None, page_id: str | None
) -> dict[str, Any]:
    """One page of groups read from the index in order: the work is the page's rows, the
    space's counts come from its maintained row (a page's own links are few: read whole)."""
    conn, space_id, base = loc.ctx.conn, loc.t.space.row["id"], loc.base
    cursor = _after(params)
    # The index follows main in the very transaction that moves it (content/indexing.py), and
    # main only ever moves to a new revision: what one page of the listing reads is kept under
    # the head it was asked for. A read that a move overtook (each statement of a read sees
    # its own snapshot) holds the next revision's rows, as it would have read them anyway;
    # only reads that began on the old head can meet it.
    key = (space_id, loc.t.revision["id"], base, status, params.page, params.limit, page_id)
    read = _READS.get(key)
    if read is None:
        read = await _read(conn, space_id, page_id, status, base, cursor, params.limit)
        if reads_committed(conn):
            _READS.put(key, read)
    chunk, holders = read.chunk, read.holders
    await loc.prefetch(
        {g.row.target for g in chunk if g.row.kind == "page"}
        | {p for pages in holders.values() for p in pages},
        {g.row.target for g in chunk if g.row.kind == "file"},
    )
    items = []
    for group in chunk:
        state, where = await _judge(loc, group)
        locations = [await loc.page(p) for p in holders[group.group_hash]]
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
        "count": read.count,
        "stats": {"total": read.total, "broken": {"total": read.broken, "changeRequest": 0}},
    }
    if read.more:
        last = chunk[-1]
        cursor_value = [last.sort_key, last.group_hash, read.count]
        body["next"] = {"page": encode_cursor(cursor_value, _LISTING)}
    return body


async def space_links(
    ctx: Ctx, space_id: str, params: PageParams, status: Status | None
) -> dict[str, Any]:
    loc = await _context(ctx, space_id)
    return await _listing(loc, params, status, None)


async def page_links(
    ctx: Ctx, space_id: str, page_id: str, params: PageParams, status: Status | None
) -> dict[str, Any]:
    loc = await _context(ctx, space_id)
    if await loc.t.snap.page(page_id) is None:
        not_found("Page")
    return await _listing(loc, params, status, page_id)


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
