"""Jobs of the foundation. Importing this module registers them."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from docshelf.kit.clock import utcnow
from docshelf.models import jobs
from docshelf.worker.registry import JobEnv, task

_FINISHED_JOB_RETENTION = timedelta(days=7)


@task("maintenance.purge", every=timedelta(minutes=10))
async def purge(conn: AsyncConnection, _payload: dict[str, Any], *, env: JobEnv) -> None:
    """Drops finished jobs older than a week."""
    now = utcnow()
    await conn.execute(
        sa.delete(jobs).where(
            jobs.c.status.in_(("done", "failed")),
            jobs.c.finished_at < now - _FINISHED_JOB_RETENTION,
        )
    )
