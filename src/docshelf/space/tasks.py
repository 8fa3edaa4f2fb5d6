"""The 7-day purge of deleted spaces."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from docshelf.space import repository
from docshelf.worker.registry import task


@task("space.purge")
async def purge_space(conn: AsyncConnection, payload: dict[str, Any]) -> None:
    row = await repository.get(conn, payload["space"])
    # Restored, or deleted again later (a newer job owns that deletion): nothing to do.
    if row is None or row["deleted_at"] is None:
        return
    if row["deleted_at"] != datetime.fromisoformat(payload["deletedAt"]):
        return
    await repository.purge(conn, payload["space"])
