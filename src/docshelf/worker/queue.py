"""Enqueueing: a row in the caller's transaction. The runner only sees committed rows, so a job
is dispatched after its request commits and vanishes with it on rollback."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from docshelf.kit.clock import utcnow
from docshelf.kit.db import upsert_insert
from docshelf.kit.ids import new_id
from docshelf.kit.logs import job_payload
from docshelf.models import jobs, spaces


async def enqueue(
    conn: AsyncConnection,
    kind: str,
    payload: dict[str, Any] | None = None,
    *,
    run_at: datetime | None = None,
    dedupe_key: str | None = None,
    max_attempts: int = 5,
    organization: str | None = None,
    space: str | None = None,
) -> str | None:
    """Returns the new job's id, or None when a pending job with the same dedupe key exists.
    `organization` (or `space`, whose organization is read in the same statement) names whose
    work the job is, for the runner's fair share; neither: the install's own upkeep."""
    now = utcnow()
    tenant: Any = organization
    if tenant is None and space is not None:
        tenant = sa.select(spaces.c.organization_id).where(spaces.c.id == space).scalar_subquery()
    row = _row(kind, payload, tenant, dedupe_key, now, run_at=run_at, max_attempts=max_attempts)
    result = await conn.execute(upsert_insert(conn, jobs).values(row).on_conflict_do_nothing())
    return str(row["id"]) if result.rowcount == 1 else None


def _row(
    kind: str,
    payload: dict[str, Any] | None,
    organization: Any,
    dedupe_key: str | None,
    now: datetime,
    *,
    run_at: datetime | None = None,
    max_attempts: int = 5,
) -> dict[str, Any]:
    return {
        "id": new_id(),
        "kind": kind,
        # The request id rides along, so the job's log lines name the request behind it.
        "payload": job_payload(payload),
        "status": "queued",
        "attempts": 0,
        "max_attempts": max_attempts,
        "run_at": run_at or now,
        "dedupe_key": dedupe_key,
        "created_at": now,
        "organization_id": organization,
    }


@dataclass(frozen=True)
class Queued:
    """One job of an `enqueue_many`."""

    payload: dict[str, Any]
    organization: str | None = None
    dedupe_key: str | None = None


# Rows of one INSERT at most: 10 parameters each, well under both engines' limits (32,766).
_ROWS_PER_INSERT = 1000


async def enqueue_many(conn: AsyncConnection, kind: str, queued: Sequence[Queued]) -> None:
    """Jobs of one kind, as `enqueue` queues each, in one statement per _ROWS_PER_INSERT (a
    job whose dedupe key is pending already is left out)."""
    now = utcnow()
    for start in range(0, len(queued), _ROWS_PER_INSERT):
        rows = [
            _row(kind, q.payload, q.organization, q.dedupe_key, now)
            for q in queued[start : start + _ROWS_PER_INSERT]
        ]
        await conn.execute(upsert_insert(conn, jobs).values(rows).on_conflict_do_nothing())


async def make_due(conn: AsyncConnection, kind: str, dedupe_key: str | None = None) -> int:
    """Brings every queued job of `kind` forward to now (a scheduled sweep, the purge of
    deleted spaces); with `dedupe_key`, queues one due now if none is queued. How many jobs
    are now due."""
    now = utcnow()
    result = await conn.execute(
        sa.update(jobs)
        .where(jobs.c.kind == kind, jobs.c.status == "queued", jobs.c.run_at > now)
        .values(run_at=now)
    )
    moved = int(result.rowcount or 0)
    if moved == 0 and dedupe_key is not None:
        moved = int(await enqueue(conn, kind, {}, dedupe_key=dedupe_key) is not None)
    return moved
