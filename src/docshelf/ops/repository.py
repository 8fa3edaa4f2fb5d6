from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from docshelf.models import jobs


async def migration_revisions(conn: AsyncConnection) -> set[str]:
    rows = await conn.execute(sa.text("SELECT version_num FROM alembic_version"))
    return {row[0] for row in rows}


async def job_counts(conn: AsyncConnection) -> list[tuple[str, str, bool, int]]:
    """(kind, status, whether an attempt failed, count): one grouped scan per scrape; finished
    jobs are purged by their own schedule, so the table stays small."""
    failed_once = jobs.c.last_error.is_not(None)
    stmt = sa.select(jobs.c.kind, jobs.c.status, failed_once, sa.func.count()).group_by(
        jobs.c.kind, jobs.c.status, failed_once
    )
    rows = await conn.execute(stmt)
    return [(kind, status, bool(failed), int(count)) for kind, status, failed, count in rows]
