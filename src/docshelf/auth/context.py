"""The FastAPI dependencies that turn a request into a caller and a service context
(kit.context.Ctx, kit.context.Staged)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from sqlalchemy.ext.asyncio import AsyncConnection

from docshelf.auth.header import scope_bearer_token
from docshelf.auth.service import Actor, authenticate, still_authenticated
from docshelf.kit.context import Caller, Ctx, Staged
from docshelf.kit.db import unit_of_work
from docshelf.kit.errors import NotFound
from docshelf.kit.routing import route_reads_published


async def authenticated_actor(request: Request) -> Actor:
    """Authenticates the caller on the request's unit of work (kit.routing); a staged write has
    none yet and authenticates on a short read of its own. Mounted on every authenticated
    router and cached by FastAPI, so the contexts below reuse it."""
    # The token the edge middleware already read (and rate-limited): one reading of the header.
    token = scope_bearer_token(request.scope)
    conn: AsyncConnection | None = getattr(request.state, "conn", None)
    if conn is not None:
        actor = await authenticate(conn, token)
    else:
        async with unit_of_work(request.app.state.engine, write=False) as own:
            actor = await authenticate(own, token)
    if actor.reads is not None and not route_reads_published(request.scope):
        # A site content token reads one site's published content and is nobody elsewhere.
        raise NotFound()
    request.state.actor = actor
    return actor


async def _actor(request: Request) -> Actor:
    """The actor the router-level `authenticated_actor` dependency resolved (FastAPI solves
    router dependencies first); authenticating here only if a router was mounted without it."""
    actor: Actor | None = getattr(request.state, "actor", None)
    return actor if actor is not None else await authenticated_actor(request)


async def request_context(request: Request) -> Ctx:
    # A plain call rather than a sub-dependency: each level of FastAPI's dependency solving
    # costs more than the call, and this runs on every authenticated request.
    actor = await _actor(request)
    return Ctx(
        conn=request.state.conn,
        actor=actor,
        base_url=request.app.state.base_url,
        state=request.app.state,
    )


Context = Annotated[Ctx, Depends(request_context)]


async def _recheck(conn: AsyncConnection, caller: Caller) -> None:
    await still_authenticated(conn, caller.token_id)


async def staged_context(request: Request) -> Staged:
    return Staged(
        engine=request.app.state.engine,
        actor=await _actor(request),
        base_url=request.app.state.base_url,
        state=request.app.state,
        recheck=_recheck,
    )


StagedContext = Annotated[Staged, Depends(staged_context)]
