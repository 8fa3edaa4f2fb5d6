"""What every service call gets: the request's unit of work, the caller and the public URL."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Depends, Request
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from docshelf.auth.header import scope_bearer_token
from docshelf.auth.service import Actor, authenticate, still_authenticated
from docshelf.kit.db import unit_of_work


@dataclass(frozen=True, slots=True)
class Ctx:
    conn: AsyncConnection
    actor: Actor
    base_url: str
    # The app's long-lived services (blob store, URL fetcher): app.state, or None outside a
    # request (CLI commands that never touch them).
    state: Any = None

    def api_url(self, path: str) -> str:
        return f"{self.base_url}/v1/{path}"

    def app_url(self, path: str) -> str:
        return f"{self.base_url}/{path}"


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


@dataclass(frozen=True, slots=True)
class Staged:
    """The caller of a write that does slow work first (fetching URLs, converting an import):
    authenticated, but holding no connection. The service checks access in `read()`, does its
    I/O and CPU work with no transaction open, then writes in one short `write()` transaction,
    where it checks access again (it may have changed meanwhile)."""

    engine: AsyncEngine
    actor: Actor
    base_url: str
    state: Any

    @asynccontextmanager
    async def read(self) -> AsyncIterator[Ctx]:
        async with unit_of_work(self.engine, write=False) as conn:
            yield Ctx(conn=conn, actor=self.actor, base_url=self.base_url, state=self.state)

    @asynccontextmanager
    async def write(self) -> AsyncIterator[Ctx]:
        async with unit_of_work(self.engine) as conn:
            # The token may have been revoked while we fetched or converted.
            await still_authenticated(conn, self.actor)
            yield Ctx(conn=conn, actor=self.actor, base_url=self.base_url, state=self.state)


async def staged_context(request: Request) -> Staged:
    return Staged(
        engine=request.app.state.engine,
        actor=await _actor(request),
        base_url=request.app.state.base_url,
        state=request.app.state,
    )


StagedContext = Annotated[Staged, Depends(staged_context)]
