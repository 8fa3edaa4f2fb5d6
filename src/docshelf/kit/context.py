"""What every service call gets: the request's unit of work, the caller and the public URL.
The FastAPI dependencies that build them from a request live with authentication
(`auth.context`): kit knows a caller only by this shape."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Protocol

from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from docshelf.kit.db import unit_of_work


class Caller(Protocol):
    """The authenticated caller (auth.service.Actor)."""

    @property
    def user_id(self) -> str: ...
    @property
    def token_id(self) -> str: ...
    @property
    def email(self) -> str: ...
    @property
    def display_name(self) -> str: ...
    @property
    def photo_url(self) -> str | None: ...
    @property
    def organization_id(self) -> str | None: ...
    @property
    def reads(self) -> Any: ...


@dataclass(frozen=True, slots=True)
class Ctx:
    conn: AsyncConnection
    actor: Caller
    base_url: str
    # The app's long-lived services (blob store, URL fetcher): app.state, or None outside a
    # request (CLI commands that never touch them).
    state: Any = None

    def api_url(self, path: str) -> str:
        return f"{self.base_url}/v1/{path}"

    def app_url(self, path: str) -> str:
        return f"{self.base_url}/{path}"


@dataclass(frozen=True, slots=True)
class Staged:
    """The caller of a write that does slow work first (fetching URLs, converting an import):
    authenticated, but holding no connection. The service checks access in `read()`, does its
    I/O and CPU work with no transaction open, then writes in one short `write()` transaction,
    where it checks access again (it may have changed meanwhile)."""

    engine: AsyncEngine
    actor: Caller
    base_url: str
    state: Any
    # Refuses a caller whose token was revoked since it authenticated (auth.context).
    recheck: Callable[[AsyncConnection, Caller], Awaitable[None]]

    @asynccontextmanager
    async def read(self) -> AsyncIterator[Ctx]:
        async with unit_of_work(self.engine, write=False) as conn:
            yield Ctx(conn=conn, actor=self.actor, base_url=self.base_url, state=self.state)

    @asynccontextmanager
    async def write(self) -> AsyncIterator[Ctx]:
        async with unit_of_work(self.engine) as conn:
            # The token may have been revoked while we fetched or converted.
            await self.recheck(conn, self.actor)
            yield Ctx(conn=conn, actor=self.actor, base_url=self.base_url, state=self.state)
