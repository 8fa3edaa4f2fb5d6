from typing import Annotated, Any

from fastapi import Query

from docshelf.auth.context import Context, StagedContext
from docshelf.kit.http import JSON, ok
from docshelf.kit.pagination import Paging
from docshelf.kit.routing import domain_router, reads_published, staged
from docshelf.kit.schemas import Out
from docshelf.search import service
from docshelf.search.schemas import SiteSearch

router = domain_router(tags=["search"])
SearchQuery = Annotated[str, Query(max_length=512)]


class SearchOut(Out):
    items: list[dict[str, Any]]
    count: int
    next: dict[str, Any] | None = None


@router.get(
    "/spaces/{spaceId}/search", response_model=SearchOut, summary="Search a space's content"
)
async def search_space(spaceId: str, query: SearchQuery, ctx: Context, paging: Paging) -> JSON:
    return ok(await service.search_space(ctx, spaceId, query, paging))


@router.get(
    "/orgs/{organizationId}/search",
    response_model=SearchOut,
    summary="Search the content of every space you can see, grouped by space",
)
async def search_organization(
    organizationId: str, query: SearchQuery, ctx: Context, paging: Paging
) -> JSON:
    return ok(await service.search_organization(ctx, organizationId, query, paging))


@router.post(
    "/orgs/{organizationId}/sites/{siteId}/search",
    response_model=SearchOut,
    summary="Search a site's published content, grouped by space",
)
@reads_published
@staged
async def search_site(
    organizationId: str, siteId: str, body: SiteSearch, staged_ctx: StagedContext, paging: Paging
) -> JSON:
    # Staged only to read: a search must not take the write lock (SQLite's is global).
    async with staged_ctx.read() as ctx:
        return ok(await service.search_site(ctx, organizationId, siteId, body, paging))
