from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from docshelf.models import jobs


async def migration_revisions(conn: AsyncConnection) -> set[str]:
    rows = await conn.execute(sa.text("SELECT version_num FROM alembic_version"))
    return {row[0] for row in rows}


async def job_counts(conn: AsyncConnection) -> list[tuple[str, str, int]]:
    # One indexed-or-small scan per scrape: finished jobs are purged by their own schedule.
    stmt = sa.select(jobs.c.kind, jobs.c.status, sa.func.count()).group_by(
        jobs.c.kind, jobs.c.status
    )
    return [(kind, status, int(count)) for kind, status, count in await conn.execute(stmt)]
