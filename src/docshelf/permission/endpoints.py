"""Grant management, mounted twice: under /spaces/{spaceId} and /collections/{collectionId}."""

# No `from __future__ import annotations`: the route signatures close over `param`, which
# FastAPI must see as a real object, not a string to resolve later.
from typing import Annotated

from fastapi import Path
from starlette.responses import Response

from docshelf.auth.context import Context
from docshelf.kit.http import JSON, empty, ok
from docshelf.kit.pagination import Paging
from docshelf.kit.routing import domain_router
from docshelf.kit.schemas import Role
from docshelf.permission import service
from docshelf.permission.schemas import (
    InviteUsersAndTeams,
    TeamPermissionList,
    UpdatePermission,
    UserPermissionList,
)

router = domain_router(tags=["permissions"])


def _mount(kind: service.Kind, prefix: str, param: str) -> None:
    base = f"{prefix}/{{{param}}}/permissions"

    @router.post(
        base, status_code=204, summary=f"Invite users and teams to a {kind}", name=f"invite_{kind}"
    )
    async def invite(
        target: Annotated[str, Path(alias=param)], body: InviteUsersAndTeams, ctx: Context
    ) -> Response:
        await service.invite(ctx, kind, target, body)
        return empty(204)

    @router.get(
        f"{base}/users",
        response_model=UserPermissionList,
        summary=f"Users granted a role on a {kind}",
        name=f"list_{kind}_users",
    )
    async def list_users(
        target: Annotated[str, Path(alias=param)], ctx: Context, paging: Paging
    ) -> JSON:
        return ok(await service.list_users(ctx, kind, target, paging))

    @router.get(
        f"{base}/teams",
        response_model=TeamPermissionList,
        summary=f"Teams granted a role on a {kind}",
        name=f"list_{kind}_teams",
    )
    async def list_teams(
        target: Annotated[str, Path(alias=param)], ctx: Context, paging: Paging
    ) -> JSON:
        return ok(await service.list_teams(ctx, kind, target, paging))

    @router.get(
        f"{base}/aggregate",
        response_model=UserPermissionList,
        summary=f"Everyone who can access a {kind}",
        name=f"aggregate_{kind}",
    )
    async def aggregate(
        target: Annotated[str, Path(alias=param)],
        ctx: Context,
        paging: Paging,
        role: Role | None = None,
    ) -> JSON:
        return ok(await service.aggregate(ctx, kind, target, paging, role))

    @router.patch(
        f"{base}/users/{{userId}}",
        status_code=204,
        summary=f"Change a user's role on a {kind}",
        name=f"update_{kind}_user",
    )
    async def update_user(
        target: Annotated[str, Path(alias=param)], userId: str, body: UpdatePermission, ctx: Context
    ) -> Response:
        await service.update(ctx, kind, target, ("user", userId), body)
        return empty(204)

    @router.delete(
        f"{base}/users/{{userId}}",
        status_code=204,
        summary=f"Remove a user from a {kind}",
        name=f"remove_{kind}_user",
    )
    async def remove_user(
        target: Annotated[str, Path(alias=param)], userId: str, ctx: Context
    ) -> Response:
        await service.remove(ctx, kind, target, ("user", userId))
        return empty(204)

    @router.patch(
        f"{base}/teams/{{teamId}}",
        status_code=204,
        summary=f"Change a team's role on a {kind}",
        name=f"update_{kind}_team",
    )
    async def update_team(
        target: Annotated[str, Path(alias=param)], teamId: str, body: UpdatePermission, ctx: Context
    ) -> Response:
        await service.update(ctx, kind, target, ("team", teamId), body)
        return empty(204)

    @router.delete(
        f"{base}/teams/{{teamId}}",
        status_code=204,
        summary=f"Remove a team from a {kind}",
        name=f"remove_{kind}_team",
    )
    async def remove_team(
        target: Annotated[str, Path(alias=param)], teamId: str, ctx: Context
    ) -> Response:
        await service.remove(ctx, kind, target, ("team", teamId))
        return empty(204)


_mount("space", "/spaces", "spaceId")
_mount("collection", "/collections", "collectionId")
