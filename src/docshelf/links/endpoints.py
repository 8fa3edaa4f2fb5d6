from typing import Annotated, Any, Literal

from fastapi import Query

from docshelf.auth.context import Context
from docshelf.kit.http import JSON, ok
from docshelf.kit.pagination import Paging
from docshelf.kit.routing import domain_router
from docshelf.kit.schemas import Out
from docshelf.links import service

router = domain_router(tags=["links"])
Status = Annotated[Literal["ok", "broken", "in-app"] | None, Query()]


class LinksOut(Out):
    items: list[dict[str, Any]]
    count: int
    stats: dict[str, Any]
    next: dict[str, Any] | None = None


class LocationsOut(Out):
    items: list[dict[str, Any]]
    count: int
    next: dict[str, Any] | None = None


@router.get(
    "/spaces/{spaceId}/links", response_model=LinksOut, summary="Links in the space's content"
)
async def space_links(spaceId: str, ctx: Context, paging: Paging, status: Status = None) -> JSON:
    return ok(await service.space_links(ctx, spaceId, paging, status))


@router.get(
    "/spaces/{spaceId}/content/page/{pageId}/links",
    response_model=LinksOut,
    summary="Links in a page",
)
async def page_links(
    spaceId: str, pageId: str, ctx: Context, paging: Paging, status: Status = None
) -> JSON:
    return ok(await service.page_links(ctx, spaceId, pageId, paging, status))


@router.get(
    "/spaces/{spaceId}/content/files/{fileId}/backlinks",
    response_model=LocationsOut,
    summary="Pages that link to a file",
)
async def file_backlinks(spaceId: str, fileId: str, ctx: Context, paging: Paging) -> JSON:
    return ok(await service.file_backlinks(ctx, spaceId, fileId, paging))
