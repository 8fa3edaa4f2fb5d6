"""What every service call gets: the request's unit of work, the caller and the public URL."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends
from sqlalchemy.ext.asyncio import AsyncConnection

from docshelf.auth.service import Actor
from docshelf.kit.deps import AppSettings, Conn, CurrentActor


@dataclass(frozen=True, slots=True)
class Ctx:
    conn: AsyncConnection
    actor: Actor
    base_url: str

    def api_url(self, path: str) -> str:
        return f"{self.base_url}/v1/{path}"

    def app_url(self, path: str) -> str:
        return f"{self.base_url}/{path}"


async def _ctx(conn: Conn, actor: CurrentActor, settings: AppSettings) -> Ctx:
    return Ctx(conn=conn, actor=actor, base_url=settings.resolved_base_url)


Context = Annotated[Ctx, Depends(_ctx)]
