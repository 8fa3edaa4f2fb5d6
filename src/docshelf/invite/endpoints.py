from __future__ import annotations

from typing import Annotated

from fastapi import Query
from starlette.responses import Response

from docshelf.auth.context import Context
from docshelf.invite import service
from docshelf.invite.schemas import CreateInvite, InviteList, InviteOut, UpdateInvite
from docshelf.kit.http import JSON, empty, ok
from docshelf.kit.pagination import Paging
from docshelf.kit.routing import domain_router
from docshelf.member.schemas import MemberOut

router = domain_router(tags=["invites"])


@router.get(
    "/orgs/{organizationId}/link-invites", response_model=InviteList, summary="List invite links"
)
async def list_invites(organizationId: str, ctx: Context, paging: Paging) -> JSON:
    return ok(await service.list_invites(ctx, organizationId, paging))


@router.get(
    "/orgs/{organizationId}/content-link-invites",
    response_model=InviteList,
    summary="List invite links to content (spaces and collections)",
)
async def list_content_invites(
    organizationId: str,
    ctx: Context,
    paging: Paging,
    space: Annotated[str | None, Query(max_length=64)] = None,
    collection: Annotated[str | None, Query(max_length=64)] = None,
) -> JSON:
    return ok(await service.list_content_invites(ctx, organizationId, paging, space, collection))


@router.post(
    "/orgs/{organizationId}/link-invites",
    response_model=InviteOut,
    status_code=201,
    summary="Create an invite link",
)
async def create_invite(organizationId: str, body: CreateInvite, ctx: Context) -> JSON:
    return ok(await service.create_invite(ctx, organizationId, body), 201)


@router.get(
    "/orgs/{organizationId}/link-invites/{inviteId}",
    response_model=InviteOut,
    summary="An invite link",
)
async def get_invite(organizationId: str, inviteId: str, ctx: Context) -> JSON:
    return ok(await service.get_invite(ctx, organizationId, inviteId))


@router.patch(
    "/orgs/{organizationId}/link-invites/{inviteId}",
    response_model=InviteOut,
    summary="Change an invite link's role",
)
async def update_invite(
    organizationId: str, inviteId: str, body: UpdateInvite, ctx: Context
) -> JSON:
    return ok(await service.update_invite(ctx, organizationId, inviteId, body))


@router.delete(
    "/orgs/{organizationId}/link-invites/{inviteId}",
    status_code=205,
    summary="Delete an invite link",
)
async def delete_invite(organizationId: str, inviteId: str, ctx: Context) -> Response:
    await service.delete_invite(ctx, organizationId, inviteId)
    return empty(205)


@router.post(
    "/orgs/{organizationId}/invites/{inviteId}",
    response_model=MemberOut,
    summary="Join an organization with an invite",
)
async def join_with_invite(organizationId: str, inviteId: str, ctx: Context) -> JSON:
    return ok(await service.join(ctx, organizationId, inviteId))
