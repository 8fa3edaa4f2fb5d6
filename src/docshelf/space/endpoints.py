from __future__ import annotations

from typing import Annotated

from fastapi import Query
from starlette.responses import Response

from docshelf.auth.context import Context
from docshelf.collection.schemas import MoveContent
from docshelf.kit.http import JSON, empty, ok
from docshelf.kit.pagination import Paging
from docshelf.kit.routing import domain_router, reads_published
from docshelf.space import service
from docshelf.space.schemas import CreateSpace, SpaceList, SpaceOut, TransferSpace, UpdateSpace

router = domain_router(tags=["spaces"])


@router.get("/orgs/{organizationId}/spaces", response_model=SpaceList, summary="List spaces")
async def list_spaces(organizationId: str, ctx: Context, paging: Paging) -> JSON:
    return ok(await service.list_in_organization(ctx, organizationId, paging))


@router.post(
    "/orgs/{organizationId}/spaces",
    response_model=SpaceOut,
    status_code=201,
    summary="Create a space",
)
async def create_space(organizationId: str, ctx: Context, body: CreateSpace | None = None) -> JSON:
    space = await service.create(ctx, organizationId, body or CreateSpace())
    return ok(space, 201, headers={"Location": space["urls"]["location"]})


# Served here, not by collections: listing spaces is the spaces package's (collections sit
# below spaces and import nothing of them).
@router.get(
    "/collections/{collectionId}/spaces", response_model=SpaceList, summary="Spaces in a collection"
)
async def list_collection_spaces(collectionId: str, ctx: Context, paging: Paging) -> JSON:
    return ok(await service.list_in_collection(ctx, collectionId, paging))


@router.get("/spaces/{spaceId}", response_model=SpaceOut, summary="A space")
@reads_published
async def get_space(
    spaceId: str, ctx: Context, shareKey: Annotated[str | None, Query(max_length=128)] = None
) -> JSON:
    return ok(await service.get(ctx, spaceId, shareKey))


@router.patch("/spaces/{spaceId}", response_model=SpaceOut, summary="Update a space")
async def update_space(spaceId: str, body: UpdateSpace, ctx: Context) -> JSON:
    return ok(await service.update(ctx, spaceId, body))


@router.delete(
    "/spaces/{spaceId}", status_code=205, summary="Delete a space (restorable for 7 days)"
)
async def delete_space(spaceId: str, ctx: Context) -> Response:
    await service.delete(ctx, spaceId)
    return empty(205)


@router.post(
    "/spaces/{spaceId}/restore", response_model=SpaceOut, summary="Restore a deleted space"
)
async def restore_space(spaceId: str, ctx: Context) -> JSON:
    return ok(await service.restore(ctx, spaceId))


@router.post(
    "/spaces/{spaceId}/duplicate",
    response_model=SpaceOut,
    status_code=201,
    summary="Duplicate a space",
)
async def duplicate_space(spaceId: str, ctx: Context) -> JSON:
    space = await service.duplicate(ctx, spaceId)
    return ok(space, 201, headers={"Location": space["urls"]["location"]})


@router.post("/spaces/{spaceId}/move", response_model=SpaceOut, summary="Move a space")
async def move_space(spaceId: str, body: MoveContent, ctx: Context) -> JSON:
    return ok(await service.move(ctx, spaceId, body))


@router.post("/spaces/{spaceId}/transfer", response_model=SpaceOut, summary="Transfer a space")
async def transfer_space(spaceId: str, body: TransferSpace, ctx: Context) -> JSON:
    return ok(await service.transfer(ctx, spaceId, body))
