from __future__ import annotations

from typing import Annotated

from fastapi import Header, Query
from starlette.responses import Response

from docshelf.auth.context import Context
from docshelf.change_request import service
from docshelf.change_request.schemas import (
    ChangeRequestList,
    ChangeRequestOut,
    CreateChangeRequest,
    Status,
    UpdateChangeRequest,
)
from docshelf.kit.http import JSON, ok
from docshelf.kit.pagination import Paging
from docshelf.kit.routing import domain_router

router = domain_router(tags=["change requests"])
PATH = "/spaces/{spaceId}/change-requests"


@router.get(PATH, response_model=ChangeRequestList, summary="List change requests")
async def list_change_requests(
    spaceId: str,
    ctx: Context,
    paging: Paging,
    status: Status = "open",
    contributor: Annotated[str | None, Query(max_length=64)] = None,
    requestedReviewer: Annotated[str | None, Query(max_length=64)] = None,
) -> JSON:
    return ok(
        await service.list_change_requests(
            ctx,
            spaceId,
            paging,
            status=status,
            contributor=contributor,
            requested_reviewer=requestedReviewer,
        )
    )


@router.post(
    PATH, response_model=ChangeRequestOut, status_code=201, summary="Create a change request"
)
async def create_change_request(
    spaceId: str, ctx: Context, body: CreateChangeRequest | None = None
) -> JSON:
    cr = await service.create(ctx, spaceId, body or CreateChangeRequest())
    return ok(cr, 201, headers={"Location": cr["urls"]["location"]})


@router.get(
    PATH + "/{changeRequestId}",
    response_model=ChangeRequestOut,
    summary="A change request, by id or by its number in the space",
)
async def get_change_request(spaceId: str, changeRequestId: str, ctx: Context) -> JSON:
    return ok(await service.get(ctx, spaceId, changeRequestId))


@router.patch(
    PATH + "/{changeRequestId}", response_model=ChangeRequestOut, summary="Update a change request"
)
async def update_change_request(
    spaceId: str,
    changeRequestId: str,
    body: UpdateChangeRequest,
    ctx: Context,
    prefer: Annotated[str | None, Header()] = None,
) -> Response:
    cr = await service.update(ctx, spaceId, changeRequestId, body)
    if _wants_minimal(prefer):
        return Response(status_code=204, headers={"Preference-Applied": "return=minimal"})
    return ok(cr)


def _wants_minimal(prefer: str | None) -> bool:
    """RFC 7240: comma-separated preferences, parameters after ';', names case-insensitive."""
    preferences = (p.split(";")[0].strip().lower() for p in (prefer or "").split(","))
    return "return=minimal" in preferences
