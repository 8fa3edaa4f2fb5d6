from __future__ import annotations

from typing import Annotated

from fastapi import Body, Query
from starlette.responses import Response

from docshelf.auth.context import Context
from docshelf.kit.http import JSON, empty, ok
from docshelf.kit.pagination import Paging
from docshelf.kit.routing import domain_router
from docshelf.team import service
from docshelf.team.schemas import (
    AddTeamMember,
    CreateTeam,
    MemberTeamList,
    TeamList,
    TeamMemberList,
    TeamOut,
    UpdateTeam,
    UpdateTeamMembers,
)

router = domain_router(tags=["teams"])
TitleFilter = Annotated[str | None, Query(max_length=64)]


@router.get("/orgs/{organizationId}/teams", response_model=TeamList, summary="List teams")
async def list_teams(
    organizationId: str,
    ctx: Context,
    paging: Paging,
    owner: Annotated[str | None, Query(max_length=64)] = None,
    title: TitleFilter = None,
) -> JSON:
    return ok(await service.list_teams(ctx, organizationId, paging, owner=owner, title=title))


@router.put(
    "/orgs/{organizationId}/teams", response_model=TeamOut, status_code=201, summary="Create a team"
)
async def create_team(organizationId: str, body: CreateTeam, ctx: Context) -> JSON:
    return ok(await service.create_team(ctx, organizationId, body), 201)


@router.get("/orgs/{organizationId}/teams/{teamId}", response_model=TeamOut, summary="A team")
async def get_team(organizationId: str, teamId: str, ctx: Context) -> JSON:
    return ok(await service.get_team(ctx, organizationId, teamId))


@router.patch(
    "/orgs/{organizationId}/teams/{teamId}", response_model=TeamOut, summary="Rename a team"
)
async def update_team(organizationId: str, teamId: str, body: UpdateTeam, ctx: Context) -> JSON:
    return ok(await service.update_team(ctx, organizationId, teamId, body))


@router.delete("/orgs/{organizationId}/teams/{teamId}", status_code=204, summary="Delete a team")
async def delete_team(organizationId: str, teamId: str, ctx: Context) -> Response:
    await service.delete_team(ctx, organizationId, teamId)
    return empty(204)


@router.get(
    "/orgs/{organizationId}/teams/{teamId}/members",
    response_model=TeamMemberList,
    summary="Team members",
)
async def list_team_members(organizationId: str, teamId: str, ctx: Context, paging: Paging) -> JSON:
    return ok(await service.list_team_members(ctx, organizationId, teamId, paging))


@router.put(
    "/orgs/{organizationId}/teams/{teamId}/members",
    status_code=204,
    summary="Add, update and remove team members",
)
async def update_team_members(
    organizationId: str, teamId: str, body: UpdateTeamMembers, ctx: Context
) -> Response:
    await service.update_team_members(ctx, organizationId, teamId, body)
    return empty(204)


@router.put(
    "/orgs/{organizationId}/teams/{teamId}/members/{userId}",
    status_code=204,
    summary="Add or update a team member",
)
async def put_team_member(
    organizationId: str,
    teamId: str,
    userId: str,
    ctx: Context,
    body: Annotated[AddTeamMember | None, Body()] = None,
) -> Response:
    await service.put_team_member(ctx, organizationId, teamId, userId, body or AddTeamMember())
    return empty(204)


@router.delete(
    "/orgs/{organizationId}/teams/{teamId}/members/{userId}",
    status_code=204,
    summary="Remove a team member",
)
async def delete_team_member(
    organizationId: str, teamId: str, userId: str, ctx: Context
) -> Response:
    await service.delete_team_member(ctx, organizationId, teamId, userId)
    return empty(204)


@router.get(
    "/orgs/{organizationId}/members/{userId}/teams",
    response_model=MemberTeamList,
    summary="Teams of a member",
)
async def list_member_teams(
    organizationId: str, userId: str, ctx: Context, paging: Paging, title: TitleFilter = None
) -> JSON:
    return ok(await service.list_member_teams(ctx, organizationId, userId, paging, title=title))
