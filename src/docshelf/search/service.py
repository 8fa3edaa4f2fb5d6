"""Full-text search of main content, in one space or across the spaces of an organization the
caller may see. The visibility rules are the same SQL the space listings use, so a result never
names a space GET would refuse; deleted spaces are never searched."""

from __future__ import annotations

from typing import Any

from docshelf.content import repository as content_repository
from docshelf.content.service import Where, target
from docshelf.content.tree.snapshot import Snapshot
from docshelf.kit.context import Ctx
from docshelf.kit.errors import BadRequest
from docshelf.kit.pagination import PageParams, decode_cursor, encode_cursor
from docshelf.organization import policy as org_policy
from docshelf.search import engine, repository
from docshelf.search.schemas import SiteSearch, SiteSearchScope
from docshelf.site import nav as navs
from docshelf.site import published, publishing

# Organization results are grouped by space from this many best pages.
ORG_PAGE_HITS = 200
# A broad query's best pages crowd into a few spaces (its candidates are the newest sections),
# and presenting a page costs ~0.2 ms: each space lists at most this many of them.
BROAD_PAGES_PER_SPACE = 5


def _query(query: str) -> str:
    cleaned = query.strip()
    if not cleaned:
        raise BadRequest("Invalid query parameter 'query': must not be empty")
    return cleaned


def _offset(params: PageParams, listing: str) -> int:
    if params.page is None:
        return 0
    (offset,) = decode_cursor(params.page, listing, 1)
    if not isinstance(offset, int) or offset < 0:
        raise BadRequest("Invalid query parameter 'page': not a cursor returned by this listing")
    return offset


def _body(
    items: list[Any], count: int, offset: int, limit: int, listing: str, served: int
) -> dict[str, Any]:
    body: dict[str, Any] = {"items": items, "count": count}
    if limit and offset + limit < served:
        body["next"] = {"page": encode_cursor([offset + limit], listing)}
    return body


async def _load_hits(snap: Snapshot, hits: list[engine.Hit]) -> None:
    """The hits' records and their ancestors into the snapshot, one map walk per level rather
    than one per page and ancestor (presenting then reads them from the snapshot)."""
    level = {h.page_id for h in hits}
    while level:
        records = await snap.pages(level)
        level = {p for r in records.values() if (p := r.get("parent"))}


async def _present_hit(
    ctx: Ctx, space_id: str, snap: Snapshot, hit: engine.Hit, rank: int
) -> dict[str, Any] | None:
    rec = await snap.page(hit.page_id)
    if rec is None:
        return None  # the index trails a concurrent change of main: skip, never invent
    path = await snap.path(hit.page_id)
    ancestors: list[dict[str, Any]] = []
    parent = rec.get("parent")
    while parent:
        above = await snap.page(parent)
        if above is None:
            break
        ancestors.append({"title": above["title"]})
        parent = above.get("parent")
    ancestors.reverse()
    # The engine's relevance (higher is better); a page scores as its best section, and its
    # sections are listed best first, so each carries the page's score.
    score = max(hit.score, 0.0)
    app = ctx.app_url(f"s/{space_id}/pages/{hit.page_id}")
    sections = []
    for s in hit.sections:
        suffix = f"#{s.anchor}" if s.anchor else ""
        sections.append(
            {
                "id": f"{hit.page_id}{suffix}",
                "title": s.title or rec["title"],
                "path": f"{path}{suffix}",
                "body": s.body,
                "score": score,
                "urls": {"app": f"{app}{suffix}"},
            }
        )
    return {
        "id": hit.page_id,
        "title": rec["title"],
        "description": rec.get("description") or "",
        "path": path,
        "score": score,
        "rank": rank,
        "ancestors": ancestors,
        "sections": sections,
        "urls": {"app": app},
    }


async def _space_result(
    ctx: Ctx,
    space_id: str,
    title: str,
    snap: Snapshot,
    hits: list[engine.Hit],
    ranks: dict[tuple[str, str], int],
) -> dict[str, Any]:
    """GitBook's `SearchSpaceResult`: the space's hit pages, ranked as in the whole search."""
    await _load_hits(snap, hits)
    pages = [
        x
        for h in hits
        if (x := await _present_hit(ctx, space_id, snap, h, ranks[h.space_id, h.page_id]))
    ]
    best = max((p["score"] for p in pages), default=0.0)
    return {"type": "space", "id": space_id, "title": title, "score": best, "pages": pages}


async def search_space(ctx: Ctx, space_id: str, query: str, params: PageParams) -> dict[str, Any]:
    text = _query(query)
    t = await target(ctx, space_id, Where())
    offset = _offset(params, "search:space")
    found = await engine.search(
        ctx.conn, text, space_ids=[space_id], limit=params.limit, offset=offset
    )
    await _load_hits(t.snap, found.hits)
    items = [
        x
        for n, h in enumerate(found.hits)
        if (x := await _present_hit(ctx, space_id, t.snap, h, offset + n + 1))
    ]
    return _body(items, found.count, offset, params.limit, "search:space", found.ranked)


async def search_organization(
    ctx: Ctx, org_id: str, query: str, params: PageParams
) -> dict[str, Any]:
    text = _query(query)
    scope = await org_policy.content_scope(ctx, await org_policy.load(ctx, org_id))
    visible = repository.visible_space_ids(org_id, scope.visible_spaces_clause())
    # One setting of PostgreSQL's plan mode for both reads of the index.
    async with engine.custom_plans(ctx.conn):
        found = await engine.search(
            ctx.conn,
            text,
            space_ids=visible,
            limit=ORG_PAGE_HITS,
            offset=0,
            count=False,
            sections=False,
        )
        order: list[str] = []
        by_space: dict[str, list[engine.Hit]] = {}
        # One-based positions in the organization-wide ranking, kept when grouped by space.
        ranks = {(h.space_id, h.page_id): n + 1 for n, h in enumerate(found.hits)}
        for hit in found.hits:
            if hit.space_id not in by_space:
                order.append(hit.space_id)
            by_space.setdefault(hit.space_id, []).append(hit)
        if not found.exact:
            by_space = {k: v[:BROAD_PAGES_PER_SPACE] for k, v in by_space.items()}
        offset = _offset(params, "search:org")
        chosen = order[offset : offset + params.limit] if params.limit else []
        # Sections (and their snippets) only for the pages of the spaces served.
        found = await engine.with_sections(
            ctx.conn, found, [h for space_id in chosen for h in by_space[space_id]]
        )
    with_sections = {(h.space_id, h.page_id): h for h in found.hits}
    by_space = {k: [with_sections[h.space_id, h.page_id] for h in v] for k, v in by_space.items()}
    rows = await repository.spaces_with_heads(ctx.conn, chosen)
    items = []
    for space_id in chosen:
        row = rows.get(space_id)
        if row is None:
            continue
        snap = content_repository.snapshot(ctx.conn, row)
        items.append(
            await _space_result(ctx, space_id, row["title"], snap, by_space[space_id], ranks)
        )
    return _body(items, len(order), offset, params.limit, "search:org", len(order))


def _site_scope_spaces(opened: published.Opened, scope: SiteSearchScope) -> list[str]:
    """The spaces a site search covers, as GitBook's `SiteSearchScope` names them among the
    site spaces the caller is shown: `all` of them, `specific` ones, or the `default` content
    (each section's default site space, with `currentSiteSpace`), restricted to the current
    site space or the others."""
    shown = opened.view.site_spaces
    by_id = {ss["id"]: ss for ss in shown}
    mode = scope.mode
    if mode == "all":
        chosen = list(shown)
    elif mode == "specific":
        chosen = [by_id[i] for i in scope.siteSpaceIds or () if i in by_id]
    else:
        current = by_id.get(scope.currentSiteSpace or "")
        defaults = [ss for ss in shown if ss["is_default"]]
        if scope.restrictTo == "currentSiteSpace":
            chosen = [current] if current is not None else []
        elif scope.restrictTo == "otherSiteSpaces":
            chosen = [ss for ss in defaults if current is None or ss["id"] != current["id"]]
        else:
            chosen = defaults + ([current] if current is not None else [])
    return list(dict.fromkeys(ss["space_id"] for ss in chosen))


async def search_site(
    ctx: Ctx, org_id: str, site_id: str, query: SiteSearch, params: PageParams
) -> dict[str, Any]:
    """GitBook's `searchSiteContent`: the site's published content the caller is shown (a
    member's view, a site content token's visitor), results grouped by space, pages whose
    condition fails for the visitor left out."""
    text = _query(query.query)
    opened, _ = await publishing.opened_for(ctx, org_id, site_id, published.Visitor())
    space_ids = _site_scope_spaces(opened, query.effective())
    offset = _offset(params, "search:site")
    found = await engine.search(
        ctx.conn, text, space_ids=sorted(space_ids), limit=ORG_PAGE_HITS, offset=0, count=False
    )
    by_space: dict[str, list[engine.Hit]] = {}
    hit_ranks: dict[tuple[str, str], int] = {}
    for rank, hit in enumerate(found.hits, start=1):
        by_space.setdefault(hit.space_id, []).append(hit)
        hit_ranks[hit.space_id, hit.page_id] = rank
    # Only pages the visitor is shown count, so a space none of whose hits they may see is
    # not counted either (a site has tens of spaces: each one's page tree is read once).
    for space_id in list(by_space):
        nav = await navs.load(ctx.conn, space_id, opened.view.spaces[space_id]["revision_id"])
        shown = (
            []
            if nav is None
            else [h for h in by_space[space_id] if nav.shown(h.page_id, opened.scope)]
        )
        if shown:
            by_space[space_id] = shown
        else:
            del by_space[space_id]
    order = [s for s in space_ids if s in by_space]
    chosen = order[offset : offset + params.limit] if params.limit else []
    items = []
    for space_id in chosen:
        space = opened.view.spaces[space_id]
        row = await content_repository.get(ctx.conn, space_id, space["revision_id"])
        if row is None:
            continue
        snap = content_repository.snapshot(ctx.conn, row)
        hits = by_space[space_id]
        result = await _space_result(ctx, space_id, space["title"], snap, hits, hit_ranks)
        if result["pages"]:
            items.append(result)
    return _body(items, len(order), offset, params.limit, "search:site", len(order))
