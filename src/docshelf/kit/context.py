"""What every service call gets: the request's unit of work, the caller and the public URL."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Depends, Request
from sqlalchemy.ext.asyncio import AsyncConnection

from docshelf.auth.header import scope_bearer_token
from docshelf.auth.service import Actor, authenticate


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


async def request_context(request: Request) -> Ctx:
    """Authenticates the caller on the request's unit of work (kit.routing). Mounted on every
    authenticated router, and cached by FastAPI, so handlers that take `Context` reuse it."""
    conn: AsyncConnection = request.state.conn
    # The token the edge middleware already read (and rate-limited): one reading of the header.
    actor = await authenticate(conn, scope_bearer_token(request.scope))
    return Ctx(conn=conn, actor=actor, base_url=request.app.state.base_url, state=request.app.state)


Context = Annotated[Ctx, Depends(request_context)]
