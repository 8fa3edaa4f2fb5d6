from __future__ import annotations

from starlette.responses import Response

from docshelf.auth.context import Context
from docshelf.collection import service
from docshelf.collection.schemas import (
    CollectionList,
    CollectionOut,
    CreateCollection,
    MoveContent,
    TransferContent,
    UpdateCollection,
)
from docshelf.kit.http import JSON, empty, ok
from docshelf.kit.pagination import Paging
from docshelf.kit.routing import domain_router

router = domain_router(tags=["collections"])


@router.get(
    "/orgs/{organizationId}/collections", response_model=CollectionList, summary="List collections"
)
async def list_collections(
    organizationId: str, ctx: Context, paging: Paging, nested: bool = True
) -> JSON:
    return ok(await service.list_collections(ctx, organizationId, paging, nested=nested))


@router.post(
    "/orgs/{organizationId}/collections",
    response_model=CollectionOut,
    status_code=201,
    summary="Create a collection",
)
async def create_collection(
    organizationId: str, ctx: Context, body: CreateCollection | None = None
) -> JSON:
    collection = await service.create(ctx, organizationId, body or CreateCollection())
    return ok(collection, 201, headers={"Location": collection["urls"]["location"]})


@router.get("/collections/{collectionId}", response_model=CollectionOut, summary="A collection")
async def get_collection(collectionId: str, ctx: Context) -> JSON:
    return ok(await service.get(ctx, collectionId))


@router.patch(
    "/collections/{collectionId}", response_model=CollectionOut, summary="Update a collection"
)
async def update_collection(collectionId: str, body: UpdateCollection, ctx: Context) -> JSON:
    return ok(await service.update(ctx, collectionId, body))


@router.delete(
    "/collections/{collectionId}", status_code=205, summary="Delete a collection and its content"
)
async def delete_collection(collectionId: str, ctx: Context) -> Response:
    await service.delete(ctx, collectionId)
    return empty(205)


@router.post(
    "/collections/{collectionId}/move", response_model=CollectionOut, summary="Move a collection"
)
async def move_collection(collectionId: str, body: MoveContent, ctx: Context) -> JSON:
    return ok(await service.move(ctx, collectionId, body))


@router.post(
    "/collections/{collectionId}/transfer",
    response_model=CollectionOut,
    summary="Transfer to another organization",
)
async def transfer_collection(collectionId: str, body: TransferContent, ctx: Context) -> JSON:
    return ok(await service.transfer(ctx, collectionId, body))
