from __future__ import annotations

from docshelf.auth.context import Context
from docshelf.kit.http import JSON, ok
from docshelf.kit.routing import domain_router
from docshelf.user import service
from docshelf.user.schemas import UserOut

router = domain_router(tags=["users"])


@router.get("/user", response_model=UserOut, summary="The authenticated user")
async def get_authenticated_user(ctx: Context) -> JSON:
    return ok(service.me(ctx))


@router.get("/users/{userId}", response_model=UserOut, summary="A user")
async def get_user(userId: str, ctx: Context) -> JSON:
    return ok(await service.get_user(ctx, userId))
