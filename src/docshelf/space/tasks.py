"""The 7-day purge of deleted spaces."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from docshelf.collection.signals import SpacesDeleted
from docshelf.space import repository, signals
from docshelf.worker.queue import enqueue
from docshelf.worker.registry import JobEnv, task

RETENTION = timedelta(days=7)
PURGE_JOB = "space.purge"


async def schedule_purge(conn: AsyncConnection, space_id: str, deleted_at: datetime) -> None:
    """Every way a space enters the deleted state schedules its purge, RETENTION later."""
    await enqueue(
        conn,
        PURGE_JOB,
        {"space": space_id, "deletedAt": deleted_at.isoformat()},
        run_at=deleted_at + RETENTION,
        space=space_id,
    )


@task(PURGE_JOB)
async def purge_space(conn: AsyncConnection, payload: dict[str, Any], *, env: JobEnv) -> None:
    row = await repository.get(conn, payload["space"])
    # Restored, or deleted again later (a newer job owns that deletion): nothing to do.
    if row is None or row["deleted_at"] is None:
        return
    if row["deleted_at"] != datetime.fromisoformat(payload["deletedAt"]):
        return
    await repository.purge(conn, payload["space"])


async def collection_spaces_deleted(conn: AsyncConnection, event: SpacesDeleted) -> None:
    """Deleted with their collection, the spaces are purged like any other deleted space."""
    await signals.left.send(conn, signals.SpacesLeft(event.space_ids))
    for space_id in event.space_ids:
        await schedule_purge(conn, space_id, event.at)


async def collection_spaces_transferred(conn: AsyncConnection, space_ids: Sequence[str]) -> None:
    await signals.left.send(conn, signals.SpacesLeft(space_ids))
