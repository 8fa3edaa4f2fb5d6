"""Enqueueing: a row in the caller's transaction. The runner only sees committed rows, so a job
is dispatched after its request commits and vanishes with it on rollback."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from docshelf.kit.clock import utcnow
from docshelf.kit.db import upsert_insert
from docshelf.kit.ids import new_id
from docshelf.kit.logs import job_payload
from docshelf.models import jobs


async def enqueue(
    conn: AsyncConnection,
    kind: str,
    payload: dict[str, Any] | None = None,
    *,
    run_at: datetime | None = None,
    dedupe_key: str | None = None,
    max_attempts: int = 5,
) -> str | None:
    """Returns the new job's id, or None when a pending job with the same dedupe key exists."""
    now = utcnow()
    job_id = new_id()
    stmt = (
        upsert_insert(conn.dialect.name, jobs)
        .values(
            id=job_id,
            kind=kind,
            # The request id rides along, so the job's log lines name the request behind it.
            payload=job_payload(payload),
            status="queued",
            attempts=0,
            max_attempts=max_attempts,
            run_at=run_at or now,
            dedupe_key=dedupe_key,
            created_at=now,
        )
        .on_conflict_do_nothing()
    )
    result = await conn.execute(stmt)
    return job_id if result.rowcount == 1 else None
