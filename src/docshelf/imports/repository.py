"""SQL of the import runs (imports applied by a job)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from docshelf.models import import_runs, spaces

# GitBook's `active` filter value covers both of these.
ACTIVE = ("pending", "in-progress")


async def insert_run(conn: AsyncConnection, **values: Any) -> None:
    await conn.execute(sa.insert(import_runs).values(**values))


async def get_run(conn: AsyncConnection, org_id: str, run_id: str) -> sa.RowMapping | None:
    stmt = sa.select(import_runs).where(
        import_runs.c.id == run_id, import_runs.c.organization_id == org_id
    )
    return (await conn.execute(stmt)).mappings().first()


def runs_in_organization(org_id: str, space_id: str | None, status: str | None) -> sa.Select[Any]:
    """The organization's runs joined to their spaces (not deleted), for the caller's
    visibility clause on `spaces`."""
    stmt = (
        sa.select(import_runs)
        .join(spaces, spaces.c.id == import_runs.c.space_id)
        .where(import_runs.c.organization_id == org_id, spaces.c.deleted_at.is_(None))
    )
    if space_id is not None:
        stmt = stmt.where(import_runs.c.space_id == space_id)
    if status == "active":
        stmt = stmt.where(import_runs.c.status.in_(ACTIVE))
    elif status is not None:
        stmt = stmt.where(import_runs.c.status == status)
    return stmt


async def start_run(conn: AsyncConnection, run_id: str, now: datetime) -> None:
    """pending -> in-progress, when the job takes it (again, after a failed attempt: started
    stays the first start)."""
    await conn.execute(
        sa.update(import_runs)
        .where(import_runs.c.id == run_id, import_runs.c.status.in_(ACTIVE))
        .values(
            status="in-progress",
            started_at=sa.func.coalesce(import_runs.c.started_at, now),
            updated_at=now,
        )
    )


async def complete_run(
    conn: AsyncConnection, run_id: str, report: dict[str, Any], now: datetime
) -> None:
    await conn.execute(
        sa.update(import_runs)
        .where(import_runs.c.id == run_id)
        .values(status="completed", report=report, completed_at=now, updated_at=now)
    )


async def fail_run(conn: AsyncConnection, run_id: str, reason: str, now: datetime) -> None:
    await conn.execute(
        sa.update(import_runs)
        .where(import_runs.c.id == run_id, import_runs.c.status.in_(ACTIVE))
        .values(status="failed", reason=reason, updated_at=now)
    )
