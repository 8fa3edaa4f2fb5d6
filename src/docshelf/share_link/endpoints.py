from __future__ import annotations

from starlette.responses import Response

from docshelf.auth.context import Context
from docshelf.kit.http import JSON, empty, ok
from docshelf.kit.pagination import Paging
from docshelf.kit.routing import domain_router
from docshelf.share_link import service
from docshelf.share_link.schemas import (
    CreateShareLink,
    ShareLinkList,
    ShareLinkOut,
    UpdateShareLink,
)

router = domain_router(tags=["sites"])

LINKS = "/orgs/{organizationId}/sites/{siteId}/share-links"


@router.get(LINKS, response_model=ShareLinkList, summary="List a site's share links")
async def list_share_links(organizationId: str, siteId: str, ctx: Context, paging: Paging) -> JSON:
    return ok(await service.list_links(ctx, organizationId, siteId, paging))


@router.post(LINKS, response_model=ShareLinkOut, status_code=201, summary="Create a share link")
async def create_share_link(
    organizationId: str, siteId: str, body: CreateShareLink, ctx: Context
) -> JSON:
    link = await service.create(ctx, organizationId, siteId, body)
    # A share link's `urls` hold only its published address; its 201 names where it is.
    location = f"{ctx.base_url}/v1/orgs/{organizationId}/sites/{siteId}/share-links/{link['id']}"
    return ok(link, 201, headers={"Location": location})


@router.patch(
    f"{LINKS}/{{shareLinkId}}",
    response_model=ShareLinkOut,
    summary="Rename, deactivate or reactivate a share link",
)
async def update_share_link(
    organizationId: str, siteId: str, shareLinkId: str, body: UpdateShareLink, ctx: Context
) -> JSON:
    return ok(await service.update(ctx, organizationId, siteId, shareLinkId, body))


@router.delete(f"{LINKS}/{{shareLinkId}}", status_code=205, summary="Delete a share link")
async def delete_share_link(
    organizationId: str, siteId: str, shareLinkId: str, ctx: Context
) -> Response:
    await service.delete(ctx, organizationId, siteId, shareLinkId)
    return empty(205)
