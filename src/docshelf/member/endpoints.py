from __future__ import annotations

from typing import Annotated

from fastapi import Query
from starlette.responses import Response

from docshelf.auth.context import Context
from docshelf.kit.http import JSON, empty, ok
from docshelf.kit.pagination import Paging
from docshelf.kit.routing import domain_router
from docshelf.member import service
from docshelf.member.schemas import (
    MemberList,
    MemberOut,
    MemberSort,
    MemberSpacesList,
    Order,
    PingOut,
    RoleFilter,
    UpdateMember,
)

router = domain_router(tags=["members"])


@router.get("/orgs/{organizationId}/members", response_model=MemberList, summary="List members")
async def list_members(
    organizationId: str,
    ctx: Context,
    paging: Paging,
    role: RoleFilter | None = None,
    search: Annotated[str | None, Query(max_length=256)] = None,
    sort: MemberSort = "joinedAt",
    order: Order = "desc",
) -> JSON:
    return ok(
        await service.list_members(
            ctx, organizationId, paging, role=role, search=search, sort=sort, order=order
        )
    )


@router.get("/orgs/{organizationId}/members/{userId}", response_model=MemberOut, summary="A member")
async def get_member(organizationId: str, userId: str, ctx: Context) -> JSON:
    return ok(await service.get_member(ctx, organizationId, userId))


@router.patch(
    "/orgs/{organizationId}/members/{userId}",
    response_model=MemberOut,
    summary="Change a member's role",
)
async def update_member(organizationId: str, userId: str, body: UpdateMember, ctx: Context) -> JSON:
    return ok(await service.update_member(ctx, organizationId, userId, body))


@router.delete(
    "/orgs/{organizationId}/members/{userId}", status_code=204, summary="Remove a member"
)
async def remove_member(organizationId: str, userId: str, ctx: Context) -> Response:
    await service.remove_member(ctx, organizationId, userId)
    return empty(204)


@router.post(
    "/orgs/{organizationId}/ping",
    response_model=PingOut,
    summary="Update the caller's last-seen time",
)
async def ping(organizationId: str, ctx: Context) -> JSON:
    return ok(await service.ping(ctx, organizationId))


@router.post(
    "/orgs/{organizationId}/members/{userId}/sso",
    response_model=MemberOut,
    summary="Mark a member as SSO member",
)
async def set_sso_member(organizationId: str, userId: str, ctx: Context) -> JSON:
    return ok(await service.set_sso(ctx, organizationId, userId))


@router.get(
    "/orgs/{organizationId}/members/{userId}/spaces",
    response_model=MemberSpacesList,
    summary="Spaces a member can access",
)
async def list_member_spaces(
    organizationId: str, userId: str, ctx: Context, paging: Paging, order: Order = "desc"
) -> JSON:
    return ok(await service.list_member_spaces(ctx, organizationId, userId, paging, order))
