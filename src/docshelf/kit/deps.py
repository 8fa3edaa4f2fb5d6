"""Request-scoped dependencies shared by every domain: the unit of work and the caller."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import Depends, Request
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from docshelf.auth.service import Actor, authenticate
from docshelf.config import Settings
from docshelf.kit.db import unit_of_work

_READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


async def _connection(request: Request) -> AsyncIterator[AsyncConnection]:
    engine: AsyncEngine = request.app.state.engine
    # Committed when the endpoint returns and before the response is sent (scope="function"),
    # so nothing is acknowledged that a failed commit would lose.
    async with unit_of_work(engine, write=request.method not in _READ_METHODS) as conn:
        yield conn


Conn = Annotated[AsyncConnection, Depends(_connection, scope="function")]


async def _actor(request: Request, conn: Conn) -> Actor:
    return await authenticate(conn, request.headers.get("authorization"))


CurrentActor = Annotated[Actor, Depends(_actor)]


async def authenticated(actor: CurrentActor) -> None:
    """Router-level guard; FastAPI caches `_actor`, so it costs nothing extra."""


def settings_of(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


AppSettings = Annotated[Settings, Depends(settings_of)]
