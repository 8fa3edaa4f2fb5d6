"""Jobs of the foundation. Importing this module registers them."""

from __future__ import annotations

import math
from datetime import timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from docshelf.kit.clock import utcnow
from docshelf.models import jobs, rate_limit_counters
from docshelf.worker.registry import task

# Counters of windows that started over an hour ago can no longer matter (windows are shorter).
_COUNTER_RETENTION = timedelta(hours=1)
_FINISHED_JOB_RETENTION = timedelta(days=7)


@task("maintenance.purge", every=timedelta(minutes=10))
async def purge(conn: AsyncConnection, _payload: dict[str, Any]) -> None:
    """Drops expired rate-limit windows and finished jobs older than a week."""
    now = utcnow()
    cutoff = math.floor((now - _COUNTER_RETENTION).timestamp())
    await conn.execute(sa.delete(rate_limit_counters).where(rate_limit_counters.c.window < cutoff))
    await conn.execute(
        sa.delete(jobs).where(
            jobs.c.status.in_(("done", "failed")),
            jobs.c.finished_at < now - _FINISHED_JOB_RETENTION,
        )
    )
